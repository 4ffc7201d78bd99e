package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

// fileKeyValue is an env var's valueFrom.fileKeyRef (EnvFiles, beta and on in v1.37): the
// value of key in the file at path of the pod's volume, as upstream's
// makeEnvironmentVariables reads it. The volume must be one the kubelet set up for the pod
// (one a container mounts); the file is read from its directory on the node, links inside
// it followed without leaving it. A file that cannot be read or parsed fails with
// upstream's "couldn't parse env file" (the reason is logged); a key that is missing, or
// whose value is empty, is skipped when the reference is optional, else fails naming the
// key and the file. The container then waits with CreateContainerConfigError.
func (k *Kubelet) fileKeyValue(ctx context.Context, pod *v1.Pod, ref *v1.FileKeySelector) (value string, skip bool, err error) {
	var vol *v1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == ref.VolumeName {
			vol = &pod.Spec.Volumes[i]
			break
		}
	}
	if vol == nil || !k.volumes.has(pod.UID, vol.Name) {
		return "", false, fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)
	}
	file, err := secureJoin(k.nodeFS, volumeHostPath(pod, vol), ref.Path)
	if err != nil {
		return "", false, err
	}
	value, err = readEnvFile(k.nodeFS, file, ref.Key)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Failed to parse env file", "pod", klog.KObj(pod))
		return "", false, errors.New("couldn't parse env file")
	}
	if value == "" {
		if isTrue(ref.Optional) {
			return "", true, nil
		}
		return "", false, fmt.Errorf("environment variable key %q not found in file %q", ref.Key, file)
	}
	return value, false, nil
}

// readEnvFile reads the value of key from the env file at p of the node's filesystem.
func readEnvFile(nodeFS *vfs.View, p, key string) (string, error) {
	data, err := nodeFS.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", p, err)
	}
	value, err := parseEnvFile(data, key)
	if errors.Is(err, bufio.ErrTooLong) {
		return "", fmt.Errorf("error reading environment variable file %q: %w", p, err)
	}
	return value, err
}

// parseEnvFile is the value of key in an env file, in the strict format of v1.37's
// EnvFiles: KEY='value' lines, the value in single quotes taken literally (no escapes, no
// expansion) and allowed to run over several lines; blank lines, lines starting with '#'
// (after leading blanks) and a comment after the closing quote are ignored. The first line
// that sets key gives its value; lines after it are not read. A line before it that is not
// in that form is an error naming its number: no '=', an empty name, blanks before '=', a
// value not in quotes, text after the closing quote, a quote never closed. KEY= 'v' (blanks
// after '=') sets an empty value, as a shell reads it. A line longer than bufio's 64 KiB
// token limit fails the read. A key not in the file is "" and no error.
func parseEnvFile(data []byte, key string) (string, error) {
	lines := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for lines.Scan() {
		n++
		line := strings.TrimLeft(lines.Text(), " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, ok := strings.Cut(line, "=")
		if !ok {
			return "", fmt.Errorf("invalid environment variable format at line %d: missing '='", n)
		}
		trimmed := strings.TrimRight(name, " \t")
		switch {
		case trimmed == "":
			return "", fmt.Errorf("invalid environment variable format at line %d: empty variable name", n)
		case trimmed != name:
			return "", fmt.Errorf("invalid environment variable format at line %d: whitespace before '=' is not allowed", n)
		}
		if rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			// NAME= 'x' assigns NAME the empty string, and 'x' is a command to the shell:
			// the rest of the line is not read.
			if name == key {
				return "", nil
			}
			continue
		}
		if rest == "" || rest[0] != '\'' {
			return "", fmt.Errorf("invalid environment variable format at line %d: value must be enclosed in single quotes", n)
		}
		first := n
		var value strings.Builder
		rest = rest[1:]
		for {
			quoted, after, closed := strings.Cut(rest, "'")
			value.WriteString(quoted)
			if closed {
				after = strings.TrimLeft(after, " \t")
				if after != "" && after[0] != '#' {
					return "", fmt.Errorf("invalid environment variable format at line %d: unexpected content after closing quote", n)
				}
				break
			}
			value.WriteByte('\n')
			if !lines.Scan() {
				return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", first)
			}
			n++
			rest = lines.Text()
		}
		if name == key {
			return value.String(), nil
		}
	}
	return "", lines.Err()
}

// secureJoin is unsafePath inside root on the node's filesystem, as filepath-securejoin's
// SecureJoin makes it: each symbolic link on the way is followed as if root were "/" (an
// absolute target starts again at root, ".." stops at it), so the result never leaves root;
// a name that does not exist is taken as written.
func secureJoin(nodeFS *vfs.View, root, unsafePath string) (string, error) {
	const maxLinks = 255
	cur := "/" // the path so far, relative to root
	pending := unsafePath
	for links := 0; pending != ""; {
		var name string
		name, pending, _ = strings.Cut(pending, "/")
		next := path.Join(cur, name) // lexical: ".." stops at "/"
		if next == "/" {
			cur = "/"
			continue
		}
		info, err := nodeFS.Lstat(path.Join(root, next))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if err != nil || info.Mode&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", &fs.PathError{Op: "SecureJoin", Path: path.Join(root, unsafePath), Err: vfs.ELOOP}
		}
		if path.IsAbs(info.Target) {
			cur = "/"
		}
		pending = info.Target + "/" + pending
	}
	return path.Join(root, cur), nil
}
