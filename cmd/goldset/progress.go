package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/goldset/goldset/suite"
)

// progress renders build events: a rewritten status line on a terminal,
// plain lines (one per case) otherwise, nothing with --quiet.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	name  string
	quiet bool
	tty   bool
	start time.Time
	last  time.Time
	shown bool
}

func newProgress(w io.Writer, name string, quiet bool) *progress {
	return &progress{w: w, name: name, quiet: quiet, start: time.Now(), tty: isTerminal(w)}
}

// isTerminal reports whether w is a terminal (progress lines are rewritten).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (p *progress) update(ev suite.Event) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	el := time.Since(p.start)
	eta := ""
	if ev.Bytes > 0 && ev.TotalBytes > ev.Bytes {
		rem := time.Duration(float64(el) * float64(ev.TotalBytes-ev.Bytes) / float64(ev.Bytes))
		eta = fmt.Sprintf(", ETA %s", rem.Round(time.Second))
	}
	line := fmt.Sprintf("%s: %d/%d cases, %s of ~%s%s", p.name, ev.CasesDone, ev.CasesTotal, humanBytes(ev.Bytes), humanBytes(ev.TotalBytes), eta)
	if p.tty {
		if time.Since(p.last) < 100*time.Millisecond && !ev.CaseDone {
			return
		}
		p.last = time.Now()
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		p.shown = true
		return
	}
	if ev.CaseDone {
		fmt.Fprintf(p.w, "%s (done %s)\n", line, ev.Case)
	}
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// lineProgress is the throttle and terminal handling every progress
// report shares: a rewritten line on a terminal (every 100 ms), a line
// every few seconds otherwise, nothing when quiet or within the first
// second.
type lineProgress struct {
	mu    sync.Mutex
	w     io.Writer
	quiet bool
	tty   bool
	start time.Time
	last  time.Time
	shown bool
}

func newLineProgress(w io.Writer, quiet bool) lineProgress {
	now := time.Now()
	return lineProgress{w: w, quiet: quiet, start: now, last: now, tty: isTerminal(w)}
}

// show prints line() when a report is due; line is not called otherwise.
func (p *lineProgress) show(line func() string) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	every := 5 * time.Second
	if p.tty {
		every = 100 * time.Millisecond
	}
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < every {
		return
	}
	p.last = now
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line())
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, line())
}

// finish clears a rewritten line.
func (p *lineProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// byteProgress reports a long read (verify, merge, compare) on stderr.
type byteProgress struct {
	lineProgress
	what string
}

func newByteProgress(w io.Writer, what string, quiet bool) *byteProgress {
	return &byteProgress{lineProgress: newLineProgress(w, quiet), what: what}
}

func (p *byteProgress) update(done, total int64) {
	if p == nil {
		return
	}
	p.show(func() string {
		pct := 100.0
		if total > 0 {
			pct = 100 * float64(done) / float64(total)
		}
		return fmt.Sprintf("%s: %s of %s (%.0f%%)", p.what, humanBytes(done), humanBytes(total), pct)
	})
}
