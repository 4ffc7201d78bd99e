package podsource

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// SharedWatcher is one inotify instance watching the manifest directories of many file
// sources: the nodes of a --node-count process. A kubelet has an inotify instance of its
// own, but Linux allows 128 per user by default (fs.inotify.max_user_instances), so the
// 129th node of one process could not watch its directory; one instance holds thousands of
// watches (fs.inotify.max_user_watches). Run dispatches each event to the source of its
// directory.
type SharedWatcher struct {
	mu   sync.Mutex
	w    *fsnotify.Watcher
	subs map[string]*sharedSub // by watched path
}

type sharedSub struct {
	event func(fsnotify.Event)
	fail  func(error)
}

// NewSharedWatcher creates the inotify instance. Run it (in a goroutine of its own) for
// events to arrive.
func NewSharedWatcher() (*SharedWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("create inotify watcher: %w", err)
	}
	return &SharedWatcher{w: w, subs: map[string]*sharedSub{}}, nil
}

// Run dispatches events until ctx ends, then closes the instance. An error of the instance
// (the kernel's queue overflowed) goes to every source, which then lists its directory again.
func (sw *SharedWatcher) Run(ctx context.Context) {
	defer sw.w.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sw.w.Events:
			if !ok {
				sw.failAll(errors.New("inotify watcher closed"))
				return
			}
			sw.mu.Lock()
			sub := sw.subs[filepath.Clean(ev.Name)]
			if sub == nil {
				sub = sw.subs[filepath.Dir(ev.Name)]
			}
			sw.mu.Unlock()
			if sub != nil {
				sub.event(ev)
			}
		case err, ok := <-sw.w.Errors:
			if !ok {
				sw.failAll(errors.New("inotify watcher closed"))
				return
			}
			sw.failAll(err)
		}
	}
}

func (sw *SharedWatcher) failAll(err error) {
	sw.mu.Lock()
	subs := make([]*sharedSub, 0, len(sw.subs))
	for _, s := range sw.subs {
		subs = append(subs, s)
	}
	sw.mu.Unlock()
	for _, s := range subs {
		s.fail(err)
	}
}

// add watches path for one source: event receives its events (on Run's goroutine; it must
// not block), fail the instance's errors.
func (sw *SharedWatcher) add(path string, event func(fsnotify.Event), fail func(error)) error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if _, dup := sw.subs[path]; dup {
		return fmt.Errorf("watch path %q: watched twice", path)
	}
	if err := sw.w.Add(path); err != nil {
		return fmt.Errorf("watch path %q: %w", path, err)
	}
	sw.subs[path] = &sharedSub{event: event, fail: fail}
	return nil
}

// remove stops watching path (a path already gone from the kernel's watch list is fine).
func (sw *SharedWatcher) remove(path string) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	delete(sw.subs, path)
	_ = sw.w.Remove(path)
}

// watchShared is watchOnce on the shared instance.
func (s *FileSource) watchShared(ctx context.Context, sw *SharedWatcher) error {
	logger := klog.FromContext(ctx)
	ended := make(chan error, 1)
	end := func(err error) {
		select {
		case ended <- err:
		default:
		}
	}
	err := sw.add(s.cfg.Path, func(ev fsnotify.Event) {
		if filepath.Clean(ev.Name) == s.cfg.Path && ev.Has(fsnotify.Remove|fsnotify.Rename) {
			s.Trigger() // the pods of a vanished directory go away at the re-list
			end(errWatchedPathGone)
			return
		}
		if s.relevant(logger, ev) {
			s.Trigger()
		}
	}, func(err error) {
		s.Trigger() // events may have been lost: list again
		end(fmt.Errorf("watch path %q: %w", s.cfg.Path, err))
	})
	if err != nil {
		return err
	}
	defer sw.remove(s.cfg.Path)
	logger.V(2).Info("Started watching manifest path", "path", s.cfg.Path, "shared", true)
	// Files may have appeared between the last list and the watch: look once more.
	s.Trigger()
	select {
	case <-ctx.Done():
		return nil
	case err := <-ended:
		return err
	}
}
