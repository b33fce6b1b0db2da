// Command goldset generates, verifies and compares golden test data for LLM
// kernels. Run `goldset --help` for the commands; doc.go has the exit codes.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/goldset/goldset/internal/shutdown"
)

// graceAfterSignal is how long a command may take to return after the first
// SIGINT/SIGTERM cancelled its context before the process exits anyway.
const graceAfterSignal = time.Second

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal cancels: commands stop at their next check,
		// remove their temporaries and exit 130. One blocked where no
		// context reaches (an open or read that cannot be cancelled) is
		// ended a second later by shutdown.Exit, which lets a bundle's final
		// rename finish and removes the temporaries. A second signal exits
		// at once.
		<-sigs
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(os.Stderr, "goldset: interrupted again, exiting at once")
			os.Exit(exitInterrupted)
		case <-time.After(graceAfterSignal):
		}
		go func() {
			<-sigs
			fmt.Fprintln(os.Stderr, "goldset: interrupted again, exiting at once")
			os.Exit(exitInterrupted)
		}()
		fmt.Fprintf(os.Stderr, "goldset: interrupted: still blocked %v after the signal, exiting (temporaries removed, nothing partial is left)\n", graceAfterSignal)
		shutdown.Exit(exitInterrupted)
	}()
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}
