package programs

import (
	"errors"
	"io/fs"

	"github.com/minikubelet/minikubelet/pkg/vfs"
)

func runLn(c *cmd) int {
	o, args := c.getopt("sfnbS:vT", nil)
	if len(args) == 0 {
		c.showUsage(1)
	}
	if len(args) == 1 {
		args = append(args, lastComponent(args[0]))
	}
	last := args[len(args)-1]
	sources := args[:len(args)-1]
	status := 0
	for _, src := range sources {
		c.tick()
		link := last
		if !o.Has('T') {
			var info vfs.Info
			var err error
			if o.Has('n') {
				info, err = c.fs().Lstat(c.abs(last))
			} else {
				info, err = c.fs().Stat(c.abs(last))
			}
			if err == nil && info.Mode.IsDir() {
				link = joinPath(last, lastComponent(src))
			}
		}
		if !o.Has('s') {
			if _, err := c.fs().Stat(c.abs(src)); err != nil {
				if info, lerr := c.fs().Lstat(c.abs(src)); lerr != nil || info.Mode&fs.ModeSymlink == 0 {
					c.perror(err, "%s", src)
					status = 1
					continue
				}
			}
		}
		if o.Has('f') {
			c.fs().Remove(c.abs(link), false)
		}
		var err error
		if o.Has('s') {
			err = c.fs().Symlink(src, c.abs(link))
		} else {
			err = c.hardLink(src, link)
		}
		if err != nil {
			c.perror(err, "%s", link)
			status = 1
			continue
		}
		if o.Has('v') {
			c.printf("'%s' -> '%s'\n", link, src)
		}
	}
	return status
}

// hardLink makes link a copy of src: the filesystem has no hard links, so the two are
// not one file afterwards.
func (c *cmd) hardLink(src, link string) error {
	if _, err := c.fs().Lstat(c.abs(link)); err == nil {
		return vfs.EEXIST
	}
	info, err := c.fs().Stat(c.abs(src))
	if err != nil {
		return err
	}
	if info.Mode.IsDir() {
		return errors.New("Operation not permitted")
	}
	data, err := c.fs().ReadFile(c.abs(src))
	if err != nil {
		return err
	}
	if err := c.fs().WriteFile(c.abs(link), data, info.Mode.Perm(), false, info.UID, info.GID); err != nil {
		return err
	}
	if info.Program != "" {
		c.fs().SetProgram(c.abs(link), info.Program)
	}
	return nil
}
