package config

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce is how long the file must stay quiet after a change before it is
// reloaded, so that an editor's write-rename-chmod sequence causes one reload.
const reloadDebounce = 100 * time.Millisecond

// Watcher reloads a configuration file when it changes on disk and when Reload is called
// (on SIGHUP, say). A reload whose file loads and validates calls apply with the new
// Config; when apply accepts it (returns nil) the reload succeeded. Otherwise the running
// configuration stays. Every reload attempt logs exactly one line ("config reloaded" at
// info level, or "config reload failed" with the reason at error level) and is reported
// once to onResult.
//
// The directory holding the file is watched, not the file itself, so editors and tools
// that replace the file (write a temporary file and rename it, delete and recreate, the
// ..data symlink swap of a Kubernetes ConfigMap volume) are followed. A config file that
// is itself a symlink into another directory is only reloaded by Reload. The several
// events of one save are coalesced (the file must stay quiet for reloadDebounce), and a
// change that leaves the file's bytes as they were when last read (a second save, a touch)
// does not reload it again.
//
// A Watcher does not load the file when created: load it once with Load at startup, so a
// broken file stops the process instead of being kept.
type Watcher struct {
	path     string
	environ  []string
	apply    func(*Config) error
	onResult func(ok bool)
	logger   *slog.Logger

	fsw       *fsnotify.Watcher
	mu        sync.Mutex // serializes reloads, so apply sees configs in the order loaded
	closeOnce sync.Once

	// seen is the SHA-256 of the bytes last read by a reload (guarded by mu); hasSeen is
	// false until a reload read the file, and after one could not.
	seen    [sha256.Size]byte
	hasSeen bool
}

// NewWatcher returns a Watcher for the file at path, resolving ${VAR} references and
// overrides against environ as Load does. apply is required; it receives each valid new
// Config, owns it, and returns an error to reject it (the error is logged). onResult, if
// not nil, is told whether each reload succeeded. A nil logger discards logs. apply and
// onResult are called from the goroutine running Run or calling Reload, never
// concurrently with each other or themselves.
//
// The first change noticed always reloads (the file may have changed since the caller
// loaded it). The directory is watched from the moment NewWatcher returns; changes are
// acted on once Run is running. Call Close (or cancel Run's context) to release the watch.
func NewWatcher(path string, environ []string, apply func(*Config) error, logger *slog.Logger, onResult func(ok bool)) (*Watcher, error) {
	if apply == nil {
		return nil, fmt.Errorf("config: watcher needs an apply function")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("config: watching %s: %w", path, err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("config: watching %s: %w", path, err)
	}
	if err := fsw.Add(filepath.Dir(abs)); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("config: watching %s: %w", path, err)
	}
	return &Watcher{
		path:     abs,
		environ:  environ,
		apply:    apply,
		onResult: onResult,
		logger:   logger,
		fsw:      fsw,
	}, nil
}

// Reload loads the file now, whether or not it changed, and applies it if it is valid. It
// returns the load or apply error, if any, after logging and reporting it; the running
// configuration is then unchanged. Reload is safe to call from any goroutine, also when
// Run is not running.
func (w *Watcher) Reload() error {
	return w.reload(true)
}

// reload is Reload; unless force is set, a file whose bytes are those last read is left
// alone (logged at debug level only) and nil returned.
func (w *Watcher) reload(force bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := os.ReadFile(w.path)
	if err != nil {
		w.hasSeen = false // whatever comes back is a change
		return w.fail(fmt.Errorf("config: %w", err))
	}
	sum := sha256.Sum256(data)
	if !force && w.hasSeen && sum == w.seen {
		w.logger.Debug("config file unchanged, not reloaded", "path", w.path)
		return nil
	}
	w.seen, w.hasSeen = sum, true
	c, err := loadBytes(w.path, data, w.environ)
	if err == nil {
		err = w.apply(c)
	}
	if err != nil {
		return w.fail(err)
	}
	w.logger.Info("config reloaded", "path", w.path)
	w.report(true)
	return nil
}

func (w *Watcher) fail(err error) error {
	w.logger.Error("config reload failed, keeping the running configuration", "path", w.path, "err", err)
	w.report(false)
	return err
}

func (w *Watcher) report(ok bool) {
	if w.onResult != nil {
		w.onResult(ok)
	}
}

// Run reloads the file after it changes until ctx is done or Close is called, then
// releases the watch and returns. It returns nil in both cases. Run must be called at
// most once.
func (w *Watcher) Run(ctx context.Context) error {
	defer w.Close()
	debounce := time.NewTimer(reloadDebounce)
	debounce.Stop() // since Go 1.23 a stopped timer delivers no stale tick
	defer debounce.Stop()
	base := filepath.Base(w.path)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return nil
			}
			if relevant(ev, base) {
				debounce.Reset(reloadDebounce)
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return nil
			}
			// An overflow may have hidden a change: reload to be sure.
			w.logger.Warn("config watch error", "path", w.path, "err", err)
			debounce.Reset(reloadDebounce)
		case <-debounce.C:
			_ = w.reload(false) // logged and reported by reload
		}
	}
}

// relevant reports whether ev may have changed the file named base in the watched
// directory. "..data" is the symlink a Kubernetes ConfigMap volume swaps on update.
func relevant(ev fsnotify.Event, base string) bool {
	name := filepath.Base(ev.Name)
	if name != base && name != "..data" {
		return false
	}
	return ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove)
}

// Close stops watching; a running Run returns. Close is idempotent and safe to call
// concurrently with Run and Reload.
func (w *Watcher) Close() error {
	var err error
	w.closeOnce.Do(func() { err = w.fsw.Close() })
	return err
}
