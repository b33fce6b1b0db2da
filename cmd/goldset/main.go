// Command goldset generates, verifies and compares golden test data for LLM
// kernels. Run `goldset --help` for the commands; doc.go has the exit codes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal cancels: commands stop at their next check,
		// remove their temporaries and exit 130. A second one exits now.
		<-sigs
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "goldset: interrupted again, exiting at once")
		os.Exit(exitInterrupted)
	}()
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}
