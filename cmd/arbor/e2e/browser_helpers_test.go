package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browserTimeout bounds one wait in the browser: the nodes are built
// with the race detector and share two cores with other tests.
const browserTimeout = 60 * time.Second

// chromium finds headless Chromium (Debian's chromium package). Without
// it the console's browser tests skip, saying how to get it, except under
// CI=true, where a missing browser must fail the run.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "the console's browser tests need headless Chromium: apt-get install -y chromium"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (CI=true: a missing browser fails the run)")
	}
	t.Skip(msg)
	return ""
}

// Browser is one headless Chromium tab.
type Browser struct {
	t   *testing.T
	ctx context.Context
	// shots is where screenshots of failures are kept.
	shots string
}

// NewBrowser starts Chromium at exec with a 1360×900 window; the nodes'
// certificates come from a test CA, which it is told to accept.
func NewBrowser(t *testing.T, exec string) *Browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exec),
		chromedp.WindowSize(1360, 900),
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.Flag("no-sandbox", true), // CI runs as root
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	dir := os.Getenv("ARBOR_CONSOLE_FAILURES")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "arbor-console-failures")
	}
	return &Browser{t: t, ctx: ctx, shots: dir}
}

// Run runs actions with a deadline.
func (b *Browser) Run(actions ...chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// Must runs actions and fails the test if they fail.
func (b *Browser) Must(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := b.Run(actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// evalIn evaluates a JavaScript expression in b's page.
func evalIn[T any](b *Browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// Eval evaluates a JavaScript expression, failing the test if it throws.
func Eval[T any](t *testing.T, b *Browser, expr string) T {
	t.Helper()
	v, err := evalIn[T](b, expr)
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// JS runs a JavaScript statement for its effect.
func JS(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[any]("(() => { "+expr+"; return null })()")(ctx, t)
		return err
	})
}

// WaitJS polls a JavaScript expression until it is true.
func (b *Browser) WaitJS(t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(browserTimeout)
	var last string
	for {
		ok, err := evalIn[bool](b, "Boolean("+expr+")")
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			status, _ := evalIn[string](b, `[...document.querySelectorAll('[role=status],[role=alert]')].map(e => e.textContent).join(' | ')`)
			t.Fatalf("timed out after %s waiting for %s (%s); page says: %s %s", browserTimeout, what, expr, status, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Screenshot saves the page as a PNG at path.
func (b *Browser) Screenshot(path string) error {
	ctx, cancel := context.WithTimeout(b.ctx, browserTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// ShotOnFailure registers a cleanup that saves a screenshot of the page
// if t failed, and logs where.
func (b *Browser) ShotOnFailure(t *testing.T) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()) + ".png"
		path := filepath.Join(b.shots, name)
		if err := b.Screenshot(path); err != nil {
			t.Logf("screenshot of the failure: %v", err)
			return
		}
		t.Logf("screenshot of the failure: %s", path)
	})
}

// jsString quotes s for JavaScript source.
func jsString(s string) string { return fmt.Sprintf("%q", s) }
