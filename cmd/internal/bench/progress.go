package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// How often the progress is shown: a bar redrawn in place on a terminal,
// or a plain line now and then in a log, where redraws would be noise.
const (
	progressTTYInterval  = 200 * time.Millisecond
	progressLineInterval = 5 * time.Second
	progressBarWidth     = 30
)

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// benchProgress shows a run's progress on stderr.
type benchProgress struct {
	w          io.Writer
	tty        bool
	duration   time.Duration
	maxOps     uint64
	ok, failed *atomic.Uint64

	stop chan struct{}
	wg   sync.WaitGroup
}

func newBenchProgress(w io.Writer, cfg benchConfig, ok, failed *atomic.Uint64) *benchProgress {
	return &benchProgress{w: w, tty: isTerminal(w), duration: cfg.Duration, maxOps: cfg.MaxOps, ok: ok, failed: failed}
}

// start shows the progress of a run that began at t0 until finish.
func (p *benchProgress) start(t0 time.Time) {
	interval := progressLineInterval
	if p.tty {
		interval = progressTTYInterval
	}
	p.stop = make(chan struct{})
	p.wg.Go(func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		lastOps, lastAt := uint64(0), t0
		for {
			select {
			case <-p.stop:
				return
			case now := <-tick.C:
				ops := p.ok.Load()
				rate := float64(ops-lastOps) / now.Sub(lastAt).Seconds()
				lastOps, lastAt = ops, now
				p.show(now.Sub(t0), ops, rate, false)
			}
		}
	})
}

// finish stops the display; on a terminal the bar is completed and the
// line ended, so the summary starts on a fresh line.
func (p *benchProgress) finish(elapsed time.Duration) {
	if p.stop == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	if p.tty {
		ops := p.ok.Load()
		p.show(elapsed, ops, float64(ops)/max(elapsed.Seconds(), 1e-9), true)
	}
}

// show prints one progress report; rate is the recent ops/s.
func (p *benchProgress) show(elapsed time.Duration, ops uint64, rate float64, final bool) {
	frac := min(elapsed.Seconds()/p.duration.Seconds(), 1)
	if p.maxOps > 0 {
		frac = max(frac, min(float64(ops+p.failed.Load())/float64(p.maxOps), 1))
	}
	if final {
		frac = 1
	}
	status := fmt.Sprintf("%5.1fs/%s %9d ok %6d errors %9.0f ops/s",
		elapsed.Seconds(), p.duration, ops, p.failed.Load(), rate)
	if !p.tty {
		fmt.Fprintf(p.w, "bench: %s\n", status)
		return
	}
	filled := int(frac * progressBarWidth)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", progressBarWidth-filled)
	end := ""
	if final {
		end = "\n"
	}
	// \r and erase-line redraw the bar in place.
	fmt.Fprintf(p.w, "\r\x1b[K[%s] %3.0f%% %s%s", bar, frac*100, status, end)
}
