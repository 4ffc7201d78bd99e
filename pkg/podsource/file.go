package podsource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/minikubelet/minikubelet/pkg/events"
	"github.com/minikubelet/minikubelet/pkg/kubetypes"
	"github.com/minikubelet/minikubelet/pkg/metrics"
	"github.com/minikubelet/minikubelet/pkg/runner"
)

// Defaults of Config.
const (
	// DefaultCheckFrequency is the kubelet's fileCheckFrequency: the full re-list period.
	DefaultCheckFrequency = 20 * time.Second
	// DefaultWatchDebounce is how long a burst of fsnotify events (an editor's create, write,
	// chmod, rename) is gathered into one re-list, so a half-written file is rarely read.
	DefaultWatchDebounce = 100 * time.Millisecond
	// DefaultWatchRetryPeriod is how often a path that cannot be watched (it does not exist
	// yet) is tried again: upstream's retryPeriod.
	DefaultWatchRetryPeriod = time.Second
)

// Event reasons of a refused manifest file.
const (
	// EventInvalidManifest: the file is not a usable pod manifest (unreadable, too large,
	// not YAML, not a Pod, or a pod without a name). Involves the node.
	EventInvalidManifest = "InvalidManifest"
	// EventFailedValidation: the file names a pod that fails validation or duplicates
	// another file's pod. Involves that pod. Same reason as upstream's config merger.
	EventFailedValidation = "FailedValidation"
)

var errPathNotExist = errors.New("path does not exist, ignoring")

// SnapshotSink receives a source's full snapshots. *Merger implements it.
type SnapshotSink interface {
	// Push hands over every pod the source has now; it may block until ctx ends.
	Push(ctx context.Context, source string, pods []*v1.Pod) error
}

var _ SnapshotSink = (*Merger)(nil)

// Config configures a FileSource.
type Config struct {
	// Path is the manifest directory (staticPodPath / --pod-manifest-path), or a single
	// manifest file. Required.
	Path string
	// NodeName suffixes every pod name and fills spec.nodeName. Required.
	NodeName string
	// Clock drives the re-list period and the watch timers. Required.
	Clock clock.Clock
	// CheckFrequency is the full re-list period. Default DefaultCheckFrequency.
	CheckFrequency time.Duration
	// Watch turns on fsnotify: a change is picked up after WatchDebounce instead of at the
	// next period. Simulate mode leaves it off and calls Relist itself after writing files.
	Watch bool
	// WatchDebounce gathers a burst of file events into one re-list. Default DefaultWatchDebounce.
	WatchDebounce time.Duration
	// SharedWatcher, if set, is the inotify instance Watch uses, shared with the other
	// nodes of the process; otherwise the source has one of its own.
	SharedWatcher *SharedWatcher
	// WatchRetryPeriod is how often a missing path is checked to start watching it.
	// Default DefaultWatchRetryPeriod.
	WatchRetryPeriod time.Duration
	// MaxFileSize refuses bigger manifest files. Default MaxManifestSize.
	MaxFileSize int64
	// Recorder receives a Warning event per refused file. Optional.
	Recorder events.Recorder
	// Registry receives static_pod_manifest_errors_total. Optional (metrics then go nowhere).
	Registry *metrics.Registry
	// UIDRoot, when set, stands for Path in what a pod's UID hashes (the file's path): the
	// same file then gets the same UID wherever the directory is. Simulate mode sets it, as
	// its manifest directory is a new temporary one at every run.
	UIDRoot string
	// Sink receives the snapshot of every Step. Required for Step.
	Sink SnapshotSink
	// Observer, if set, is told every file content read and every listing (the flight
	// recorder). Its calls come from ListOnce.
	Observer Observer
}

// Observer watches what the file source finds in the manifest directory.
type Observer interface {
	// ManifestRead is a file's content as read (by name in the directory), good or bad.
	ManifestRead(name string, data []byte)
	// ManifestsListed names the files a listing found.
	ManifestsListed(names []string)
}

// FileSource reads static pod manifests from a directory: the kubelet's file source. It is a
// loop of the node's loop table: Step relists (reads the whole directory, pushes one
// snapshot to the sink) every CheckFrequency, and WatchDebounce after Trigger — which the
// fsnotify watcher (WatchLoop, daemon only) calls on every file event, and simulate mode
// calls after writing a manifest.
//
// The node's owner is its one caller (Due, Step, ListOnce, Kept), so it keeps no lock; the
// watcher's goroutine only calls Trigger, which stores an instant atomically.
type FileSource struct {
	cfg         Config
	errorsTotal *prometheus.CounterVec

	firstSeen map[types.UID]metav1.Time
	reported  map[string]string // refused path -> what was last reported about it (once per change)
	notes     map[string]bool   // odd things logged once while they last (a subdirectory, ignored fields)
	// priorityWarned holds the static pod priority warnings already logged.
	priorityWarned map[string]bool
	curNotes       map[string]bool // the notes of the list in progress
	missing        bool            // the path did not exist at the last list
	// parsed caches each good file's pods by path and content, so a re-list (every
	// CheckFrequency, and after every file event) parses only the files that changed:
	// parsing is most of a re-list's cost. Entries of files not listed again are dropped.
	parsed    map[string]*parsedFile
	reads     int                    // files opened to be read, for tests
	curParsed map[string]*parsedFile // the cache being built by the list in progress
	ahead     map[string]aheadFile   // the list in progress's files read ahead (parseAhead)
	// listDigest hashes the accepted files (path and content) of the last list; Relist
	// skips a push whose digest is pushedDigest, the last snapshot the sink took.
	listDigest   uint64
	pushedDigest uint64
	pushed       bool

	wake *runner.Signal

	nextList time.Time // the periodic relist; zero before the first
	// triggered is the debounced relist after a file event, in Unix nanoseconds of the
	// source's clock; 0 when none is pending. Trigger sets it from the watcher's goroutine.
	triggered atomic.Int64
}

// NewFileSource validates cfg, fills its defaults and registers the source's metric.
func NewFileSource(cfg Config) (*FileSource, error) {
	if cfg.Path == "" {
		return nil, errors.New("invalid file source config: path is required")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("invalid file source config: nodeName is required")
	}
	if cfg.CheckFrequency < 0 || cfg.WatchDebounce < 0 || cfg.WatchRetryPeriod < 0 || cfg.MaxFileSize < 0 {
		return nil, fmt.Errorf("invalid file source config: durations and sizes must not be negative (checkFrequency %v, watchDebounce %v, watchRetryPeriod %v, maxFileSize %d)",
			cfg.CheckFrequency, cfg.WatchDebounce, cfg.WatchRetryPeriod, cfg.MaxFileSize)
	}
	// Upstream trims trailing separators (inotify wants none); Clean also tidies "a//b".
	cfg.Path = filepath.Clean(cfg.Path)
	if cfg.Clock == nil {
		// No silent real clock: every loop must be able to run on a fake one.
		return nil, errors.New("static pod source: Config.Clock is required")
	}
	if cfg.CheckFrequency == 0 {
		cfg.CheckFrequency = DefaultCheckFrequency
	}
	if cfg.WatchDebounce == 0 {
		cfg.WatchDebounce = DefaultWatchDebounce
	}
	if cfg.WatchRetryPeriod == 0 {
		cfg.WatchRetryPeriod = DefaultWatchRetryPeriod
	}
	if cfg.MaxFileSize == 0 {
		cfg.MaxFileSize = MaxManifestSize
	}
	name := metrics.StaticPodManifestErrors
	if cfg.Registry != nil {
		name = cfg.Registry.Name(name)
	}
	s := &FileSource{
		cfg: cfg,
		errorsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: name,
			Help: "Static pod manifest files refused, by reason; a bad file counts once per distinct content.",
		}, []string{"reason"}),
		firstSeen:      map[types.UID]metav1.Time{},
		reported:       map[string]string{},
		notes:          map[string]bool{},
		priorityWarned: map[string]bool{},
		parsed:         map[string]*parsedFile{},
		wake:           runner.NewSignal(),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(s.errorsTotal)
	}
	return s, nil
}

// Path is the watched path (cleaned).
func (s *FileSource) Path() string { return s.cfg.Path }

// ListOnce reads every manifest now and returns the pods of the good files in file name
// order, and every refused file. Each refused file is reported (logged as "Could not process
// manifest file", a Warning event, static_pod_manifest_errors_total{reason} +1) once per
// change of its content, so callers must not log fileErrs again. err is set when the path
// itself could not be read: for a path that does not exist pods is empty and the snapshot is
// still meaningful (upstream then reports an empty source: every static pod goes away); for
// any other err the snapshot must not be used.
func (s *FileSource) ListOnce(ctx context.Context) (pods []*v1.Pod, fileErrs []*FileError, err error) {
	logger := klog.FromContext(ctx)
	s.curNotes = map[string]bool{}
	s.curParsed = make(map[string]*parsedFile, len(s.parsed))
	defer func() {
		s.notes, s.curNotes = s.curNotes, nil
		s.parsed, s.curParsed = s.curParsed, nil
		s.ahead = nil
	}()

	info, err := os.Stat(s.cfg.Path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("read manifest path %q: %w", s.cfg.Path, err)
		}
		if !s.missing {
			// Once per disappearance, not every period as upstream, to keep logs readable.
			logger.Error(errPathNotExist, "Unable to read config path", "path", s.cfg.Path)
			s.missing = true
		}
		s.forgetAll()
		if s.cfg.Observer != nil {
			s.cfg.Observer.ManifestsListed(nil)
		}
		return []*v1.Pod{}, nil, fmt.Errorf("read manifest path %q: %w", s.cfg.Path, err)
	}
	if s.missing {
		logger.V(2).Info("Manifest path exists again", "path", s.cfg.Path)
		s.missing = false
	}

	var files []manifestFile
	switch {
	case info.Mode().IsRegular():
		files = []manifestFile{{path: s.cfg.Path, info: info}}
	case info.IsDir():
		files, err = s.listDir(logger)
		if err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("read manifest path %q: path is not a directory or file (mode %v)", s.cfg.Path, info.Mode())
	}

	s.parseAhead(ctx, files)
	now := metav1.NewTime(s.cfg.Clock.Now())
	// Sized for the files there are and keyed without building a string per pod: a
	// directory of 10,000 manifests is read every 20 s, and its maps grown and its
	// "namespace/name" keys made each time were a tenth of what an idle node allocated.
	owner := make(map[types.NamespacedName]string, len(files)) // the file that defines a pod
	liveUIDs := make(map[types.UID]bool, len(files))
	bad := map[string]bool{}
	pods = make([]*v1.Pod, 0, len(files))
	digest := fnv.New64a() // of every accepted file's path and content
	var digestIn []byte
	for _, file := range files {
		path := file.path
		filePods, key, ferr := s.readFile(logger, file)
		if ferr == nil {
			ferr = s.checkDuplicates(path, filePods, owner)
		}
		if ferr != nil && ferr.Reason == ReasonReadError && errors.Is(ferr.Err, fs.ErrNotExist) {
			continue // removed since the directory was read: not a bad file (upstream skips it too)
		}
		if ferr != nil {
			fileErrs = append(fileErrs, ferr)
			bad[path] = true
			s.report(logger, ferr, key)
			continue
		}
		if _, was := s.reported[path]; was {
			logger.V(2).Info("Manifest file is valid again", "path", path)
			delete(s.reported, path)
		}
		digestIn = append(append(append(append(digestIn[:0], path...), 0), key...), 0)
		digest.Write(digestIn)
		for _, pod := range filePods {
			owner[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = path
			liveUIDs[pod.UID] = true
			// A pod without a creation time gets the time its content was first seen, so
			// additions sort deterministically and a restart of the loop does not reorder them.
			if pod.CreationTimestamp.IsZero() {
				t, ok := s.firstSeen[pod.UID]
				if !ok {
					t = now
					s.firstSeen[pod.UID] = t
				}
				pod.CreationTimestamp = t
			}
			// The kubelet's own annotations, set once before the pod is first handed out, so
			// the merger keeps this very pod instead of a copy with annotations of its own
			// (one copy of a static pod, not two). A later change of the file is a new pod.
			if _, ok := pod.Annotations[kubetypes.ConfigSourceAnnotationKey]; !ok {
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[kubetypes.ConfigSourceAnnotationKey] = kubetypes.FileSource
				pod.Annotations[kubetypes.ConfigFirstSeenAnnotationKey] = now.Format(time.RFC3339Nano)
			}
			pods = append(pods, pod)
		}
	}
	for uid := range s.firstSeen {
		if !liveUIDs[uid] {
			delete(s.firstSeen, uid)
		}
	}
	for path := range s.reported {
		if !bad[path] {
			delete(s.reported, path) // gone or fine: a new problem with it is reported afresh
		}
	}
	s.listDigest = digest.Sum64()
	if s.cfg.Observer != nil {
		names := make([]string, 0, len(files))
		for _, f := range files {
			names = append(names, filepath.Base(f.path))
		}
		s.cfg.Observer.ManifestsListed(names)
	}
	logger.V(5).Info("Listed static pod manifests", "path", s.cfg.Path, "files", len(files), "pods", len(pods), "refused", len(fileErrs))
	return pods, fileErrs, nil
}

// listDir returns the candidate manifest files of the directory, sorted, skipping dotfiles,
// editor temp files and anything that is not a regular file.
// manifestFile is a regular file to read, with what Stat said of it.
type manifestFile struct {
	path string
	info fs.FileInfo
}

func (s *FileSource) listDir(logger klog.Logger) ([]manifestFile, error) {
	entries, err := os.ReadDir(s.cfg.Path) // sorted by name, as upstream's sorted glob
	if err != nil {
		return nil, fmt.Errorf("read manifest directory %q: %w", s.cfg.Path, err)
	}
	files := make([]manifestFile, 0, len(entries))
	for _, e := range entries {
		if IgnoredFileName(e.Name()) {
			continue
		}
		path := filepath.Join(s.cfg.Path, e.Name())
		info, err := os.Stat(path) // follows symlinks, as upstream
		switch {
		case err != nil:
			if !errors.Is(err, fs.ErrNotExist) { // removed since ReadDir, or a dangling link
				s.noteOnce(logger, "", path, "Could not get metadata", err)
			}
		case info.IsDir():
			s.noteOnce(logger, "", path, "Provided manifest path is a directory, not recursing into manifest path", nil)
		case info.Mode().IsRegular():
			files = append(files, manifestFile{path: path, info: info})
		default:
			s.noteOnce(logger, "", path, "Manifest path is not a directory or file", fmt.Errorf("mode %v", info.Mode()))
		}
	}
	return files, nil
}

// noteOnce logs something odd about a path once while it lasts (upstream logs it every
// period). Called during ListOnce only.
func (s *FileSource) noteOnce(logger klog.Logger, key, path, msg string, err error) {
	k := path + "\x00" + key + "\x00" + msg
	s.curNotes[k] = true
	if s.notes[k] {
		return
	}
	if err != nil {
		logger.Error(err, msg, "path", path)
	} else {
		logger.Info(msg, "path", path)
	}
}

// IgnoredFileName reports whether a directory entry is not a manifest: dotfiles (upstream)
// and editor leftovers (vim .swp/.swo/.swx, emacs "#name#" and "name~", ".tmp" files) so a
// half-saved edit is never read as a pod.
func IgnoredFileName(name string) bool {
	switch {
	case strings.HasPrefix(name, "."),
		strings.HasSuffix(name, "~"),
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"),
		strings.HasSuffix(name, ".swp"), strings.HasSuffix(name, ".swo"), strings.HasSuffix(name, ".swx"),
		strings.HasSuffix(name, ".tmp"):
		return true
	}
	return false
}

// readFile reads and parses one manifest. key identifies the file's content and outcome, so a
// problem is reported once per change.
func (s *FileSource) readFile(logger klog.Logger, file manifestFile) (pods []*v1.Pod, key string, ferr *FileError) {
	path := file.path
	// A file whose stat is unchanged since it was last read is not read again: at 10,000
	// manifests, reading and hashing every file each fileCheckFrequency was most of an
	// idle node's CPU. A write changes the modification and change times, a replacement
	// (rename over it) the inode. But file times tick once per kernel jiffy (1-10ms), so
	// two writes of the same size within one tick look alike ("racy git"): a stamp is only
	// trusted once a second read, at a later list, found it with the same content. The
	// watch's debounce (100ms) puts that read well past the tick of the last write.
	st := stampOf(file.info)
	if pf, ok := s.parsed[path]; ok && st.valid && pf.confirmed && pf.stamp == st {
		s.curParsed[path] = pf
		if len(pf.warnings) > 0 {
			s.noteOnce(logger, pf.key, path, "Manifest file has fields the kubelet ignores", errors.New(strings.Join(pf.warnings, "; ")))
		}
		return pf.pods, pf.key, nil
	}
	s.reads++
	ahead, ok := s.ahead[path]
	if !ok {
		ahead = s.readAhead(file)
	}
	data := ahead.data
	if ahead.ferr != nil {
		return nil, ahead.key, ahead.ferr
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.ManifestRead(filepath.Base(path), data)
	}
	key = ahead.key
	pf := s.parse(data, path, ahead)
	if pf.ferr != nil {
		return nil, key, pf.ferr
	}
	// The stamp is the listing's, taken before the read: a write during the read changes
	// the file's times again, so the next list reads it again.
	pf.confirmed = pf.key == key && pf.stamp == st
	pf.stamp, pf.key = st, key
	if w := pf.priorityWarning; w != "" && !s.priorityWarned[w] {
		// Once per warning and node, as upstream's staticPodWarningCache (the warnings
		// name no pod): the first pod that earns it is the one logged.
		s.priorityWarned[w] = true
		logger.Info(w, "pod", klog.KObj(pf.pods[0]))
	}
	if len(pf.warnings) > 0 {
		s.noteOnce(logger, key, path, "Manifest file has fields the kubelet ignores", errors.New(strings.Join(pf.warnings, "; ")))
	}
	return pf.pods, key, nil
}

// aheadFile is a manifest file read, and parsed unless its content is the one parsed
// before, by readAhead: readFile goes on from there.
type aheadFile struct {
	data []byte
	key  string     // readFile's key for the content, or for the read's failure
	ferr *FileError // the read failed
	sum  [sha256.Size]byte
	m    *parsedManifest // nil: the content is the one parsed before, or the read failed
}

// readAhead reads file and parses its content when it changed. It reads only what
// s.parsed held before the list, so several can run at once (parseAhead).
func (s *FileSource) readAhead(file manifestFile) aheadFile {
	path := file.path
	// O_NONBLOCK spares the two fcntl calls os.Open makes on Linux to try (and fail) to
	// register a regular file with the poller: a third of a re-list's system calls. It has
	// no effect on reading a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return aheadFile{key: "open:" + err.Error(), ferr: &FileError{Path: path, Reason: ReasonReadError, Err: err}}
	}
	defer f.Close()
	size := file.info.Size() // the listing's Stat: one syscall fewer per file and list
	if size > s.cfg.MaxFileSize {
		return aheadFile{key: fmt.Sprintf("size:%d", size), ferr: &FileError{Path: path, Reason: ReasonTooLarge,
			Err: fmt.Errorf("file is %d bytes, over the %d-byte limit for a manifest", size, s.cfg.MaxFileSize)}}
	}
	// Read at most one byte past the limit: the file may grow between Stat and Read. The
	// buffer fits the file as it was, so the read takes one call and the EOF another.
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	_, err = buf.ReadFrom(io.LimitReader(f, s.cfg.MaxFileSize+1))
	data := buf.Bytes()
	if err != nil {
		return aheadFile{key: "read:" + err.Error(), ferr: &FileError{Path: path, Reason: ReasonReadError, Err: err}}
	}
	if int64(len(data)) > s.cfg.MaxFileSize {
		return aheadFile{key: fmt.Sprintf("size:>%d", s.cfg.MaxFileSize), ferr: &FileError{Path: path, Reason: ReasonTooLarge,
			Err: fmt.Errorf("file is over the %d-byte limit for a manifest", s.cfg.MaxFileSize)}}
	}
	h := fnv.New64a()
	h.Write(data)
	a := aheadFile{data: data, key: fmt.Sprintf("content:%x", h.Sum64()), sum: sha256.Sum256(data)}
	if pf, ok := s.parsed[path]; !ok || pf.sum != a.sum {
		m := parseManifest(data, path, s.uidPath(path), s.cfg.NodeName)
		a.m = &m
	}
	return a
}

// parseAheadMin is how many files a list must have to read and parse before it reads them
// on all cores (parseAhead): a directory of 10,000 new manifests took seconds of the node's
// loop on one.
var parseAheadMin = 64 // a variable for the test that compares both ways

// parseAhead reads and parses at once, on up to GOMAXPROCS goroutines that end before it
// returns, the files readFile would read (not known unchanged by their stat), when there are
// parseAheadMin of them or more. Parsing is a pure function of a file's bytes, so the
// results are what reading them one by one gives; readFile takes them in order.
func (s *FileSource) parseAhead(ctx context.Context, files []manifestFile) {
	var todo []manifestFile
	for _, file := range files {
		st := stampOf(file.info)
		if pf, ok := s.parsed[file.path]; ok && st.valid && pf.confirmed && pf.stamp == st {
			continue
		}
		todo = append(todo, file)
	}
	if len(todo) < parseAheadMin {
		return
	}
	results := make([]aheadFile, len(todo))
	done := make([]bool, len(todo))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Go(func() {
			// A cancelled list (the node stopping) takes no more: what is not read ahead
			// is read by readFile, if the list goes on at all.
			for i := int(next.Add(1) - 1); i < len(todo) && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				results[i], done[i] = s.readAhead(todo[i]), true
			}
		})
	}
	wg.Wait()
	s.ahead = make(map[string]aheadFile, len(todo))
	for i, file := range todo {
		if done[i] {
			s.ahead[file.path] = results[i]
		}
	}
}

// parsedFile is one manifest file's parse result, for the content with digest sum.
type parsedFile struct {
	sum       [sha256.Size]byte
	stamp     fileStamp // the file's stat when it was last read
	confirmed bool      // two reads, at two lists, found the same stamp and content
	key       string    // readFile's key for the content
	// pods are handed out as they are, shared with every list's caller, who must not modify
	// them (the merger copies what it changes). ListOnce gives a pod its creation time
	// before it is first handed out, and never changes it after.
	pods            []*v1.Pod
	warnings        []string
	priorityWarning string
	ferr            *FileError // not cached: a refused file is parsed again at each list
}

// fileStamp is what a stat says of a file's identity and last change.
type fileStamp struct {
	valid            bool
	ino, size        uint64
	mtimeNs, ctimeNs int64
}

func stampOf(info fs.FileInfo) fileStamp {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{} // never matches: the file is read every time
	}
	return fileStamp{valid: true, ino: uint64(st.Ino), size: uint64(st.Size),
		mtimeNs: st.Mtim.Nano(), ctimeNs: st.Ctim.Nano()}
}

// parse parses data, the content of path, or takes the result from the cache when the
// content is the same as at the last list. Called during ListOnce only.
func (s *FileSource) parse(data []byte, path string, ahead aheadFile) *parsedFile {
	if ahead.m == nil {
		// readAhead found this content in the last list's cache, which no list changes
		// until it ends.
		pf := s.parsed[path]
		s.curParsed[path] = pf
		return pf
	}
	m := ahead.m
	pf := &parsedFile{sum: ahead.sum, pods: m.pods, warnings: m.warnings, priorityWarning: m.priorityWarning, ferr: m.ferr}
	if pf.ferr == nil {
		s.curParsed[path] = pf
	}
	return pf
}

// uidPath is the path a static pod's UID is derived from: relative to UIDRoot when set.
func (s *FileSource) uidPath(path string) string {
	if s.cfg.UIDRoot != "" {
		if rel, err := filepath.Rel(s.cfg.Path, path); err == nil {
			return filepath.Join(s.cfg.UIDRoot, rel)
		}
	}
	return path
}

// checkDuplicates refuses a file whose pod a file earlier in sorted order already defines.
func (s *FileSource) checkDuplicates(path string, pods []*v1.Pod, owner map[types.NamespacedName]string) *FileError {
	for _, pod := range pods {
		if other, dup := owner[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}]; dup {
			return &FileError{Path: path, Reason: ReasonDuplicate, Pod: events.PodRef(pod),
				Err: fmt.Errorf("duplicate pod name %q in namespace %q: already defined by %s, ignoring this file", pod.Name, pod.Namespace, other)}
		}
	}
	return nil
}

// report logs, records and counts a refused file, unless this very problem with this very
// content was already reported.
func (s *FileSource) report(logger klog.Logger, ferr *FileError, key string) {
	k := ferr.Reason + "\x00" + key + "\x00" + ferr.Err.Error()
	if s.reported[ferr.Path] == k {
		logger.V(5).Info("Manifest file still refused", "path", ferr.Path, "reason", ferr.Reason)
		return
	}
	s.reported[ferr.Path] = k
	logger.Error(ferr, "Could not process manifest file", "path", ferr.Path)
	s.errorsTotal.WithLabelValues(ferr.Reason).Inc()
	if s.cfg.Recorder == nil {
		return
	}
	if ferr.Pod != nil {
		s.cfg.Recorder.Eventf(ferr.Pod, v1.EventTypeWarning, EventFailedValidation, "Error validating pod from manifest file %s", ferr.Error())
	} else {
		s.cfg.Recorder.Eventf(events.NodeRef(s.cfg.NodeName), v1.EventTypeWarning, EventInvalidManifest, "Could not process manifest file %s", ferr.Error())
	}
}

// forgetAll drops per-file state when the whole path went away.
func (s *FileSource) forgetAll() {
	clear(s.firstSeen)
	clear(s.reported)
	clear(s.curNotes)
	clear(s.curParsed)
}

// Relist is the step: ListOnce, then push the snapshot to sink. A missing path pushes an
// empty snapshot (the source is seen, and its pods go away, as upstream); an unreadable one
// pushes nothing, so a transient error never removes running pods. The returned error is
// the path-level error, already logged for a missing path.
func (s *FileSource) Relist(ctx context.Context, sink SnapshotSink) error {
	pods, _, err := s.ListOnce(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The same files with the same content make the same pods: the merger would find no
	// difference, so the snapshot is not pushed again (the kubelet's merger does that
	// comparison at every fileCheckFrequency; here it is most of a long simulation's work).
	digest, same := s.listDigest, err == nil && s.pushed && s.listDigest == s.pushedDigest
	if same {
		return nil
	}
	if perr := sink.Push(ctx, kubetypes.FileSource, pods); perr != nil {
		return fmt.Errorf("push static pods snapshot: %w", perr)
	}
	s.pushed, s.pushedDigest = err == nil, digest
	return err
}

// Due is when the next relist is due: at once before the first, then CheckFrequency after
// the last, or WatchDebounce after a Trigger if that is sooner.
func (s *FileSource) Due(now time.Time) time.Time {
	if s.nextList.IsZero() {
		return now
	}
	if t := s.triggered.Load(); t != 0 && t < s.nextList.UnixNano() {
		return time.Unix(0, t)
	}
	return s.nextList
}

// Wake is notified by Trigger.
func (s *FileSource) Wake() *runner.Signal { return s.wake }

// Step relists and pushes the snapshot to Config.Sink. Triggers that arrived before it are
// covered by it: one relist reads every change.
func (s *FileSource) Step(ctx context.Context) {
	now := s.cfg.Clock.Now()
	first := s.nextList.IsZero()
	s.nextList = now.Add(s.cfg.CheckFrequency)
	s.triggered.Store(0)
	logger := klog.FromContext(ctx)
	if first {
		logger.V(1).Info("Watching path", "path", s.cfg.Path, "checkFrequency", s.cfg.CheckFrequency, "fsnotify", s.cfg.Watch)
	}
	if s.cfg.Sink == nil {
		logger.Error(nil, "File source has no sink; dropping snapshot", "path", s.cfg.Path)
		return
	}
	if err := s.Relist(ctx, s.cfg.Sink); err != nil && !errors.Is(err, fs.ErrNotExist) {
		logger.Error(err, "Unable to read config path", "path", s.cfg.Path)
	}
}

// Trigger asks for a relist WatchDebounce from now, so a burst of file events (an editor's
// create, write, chmod, rename) is read once, and rarely half-written. Triggers within that
// window coalesce. Never blocks; safe to call from any goroutine (the fsnotify watcher's).
func (s *FileSource) Trigger() {
	s.triggered.CompareAndSwap(0, s.cfg.Clock.Now().Add(s.cfg.WatchDebounce).UnixNano())
	s.wake.Notify()
}

// Kept is how many pods and parsed files the source remembers (first-seen times, parsed
// manifests): it follows the directory, so it drops to zero when the directory is emptied.
func (s *FileSource) Kept() (pods, files int) {
	return len(s.firstSeen), len(s.parsed)
}
