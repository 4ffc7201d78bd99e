package podsource

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

var errWatchedPathGone = errors.New("watched path was removed or renamed")

// WatchLoop keeps an fsnotify watch on the path and calls Trigger on every relevant event,
// until ctx ends. When the path is missing or the watch fails it retries every
// WatchRetryPeriod (on the clock), so a directory created later is watched within that
// period. It blocks on the kernel's events: the daemon runs it as a goroutine of its own
// beside the loop table (simulate mode has no watcher and triggers relists itself).
func (s *FileSource) WatchLoop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	var lastErr string
	for ctx.Err() == nil {
		err := s.watchOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, errWatchedPathGone):
			// The periodic list reports a missing path; nothing to add here.
		case err.Error() != lastErr:
			logger.Error(err, "Unable to watch config path", "path", s.cfg.Path)
		}
		if err != nil {
			lastErr = err.Error()
		}
		t := s.cfg.Clock.NewTimer(s.cfg.WatchRetryPeriod)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// relevant says whether a file event may change what the directory lists.
func (s *FileSource) relevant(logger klog.Logger, ev fsnotify.Event) bool {
	if IgnoredFileName(filepath.Base(ev.Name)) {
		logger.V(5).Info("Ignored manifest path event", "event", ev.String())
		return false
	}
	if ev.Has(fsnotify.Create | fsnotify.Write | fsnotify.Remove | fsnotify.Rename | fsnotify.Chmod) {
		logger.V(5).Info("Manifest path event", "event", ev.String())
		return true
	}
	return false
}

// watchOnce watches until the watch breaks or ctx ends: with an inotify instance of its
// own, or on the process's shared one (Config.SharedWatcher).
func (s *FileSource) watchOnce(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if _, err := os.Stat(s.cfg.Path); err != nil {
		return err
	}
	if s.cfg.SharedWatcher != nil {
		return s.watchShared(ctx, s.cfg.SharedWatcher)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("create inotify watcher: %w", err)
	}
	defer w.Close()
	if err := w.Add(s.cfg.Path); err != nil {
		return fmt.Errorf("watch path %q: %w", s.cfg.Path, err)
	}
	logger.V(2).Info("Started watching manifest path", "path", s.cfg.Path)
	// Files may have appeared between the last list and the watch: look once more.
	s.Trigger()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("inotify watcher closed")
			}
			if filepath.Clean(ev.Name) == s.cfg.Path && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				s.Trigger() // the pods of a vanished directory go away at the re-list
				return errWatchedPathGone
			}
			if s.relevant(logger, ev) {
				s.Trigger()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("inotify watcher closed")
			}
			return fmt.Errorf("watch path %q: %w", s.cfg.Path, err)
		}
	}
}
