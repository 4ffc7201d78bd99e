package programs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

func runGetent(c *cmd) int {
	if len(c.args) == 0 {
		c.errorf("wrong number of arguments")
		return 1
	}
	db, keys := c.args[0], c.args[1:]
	status := 0
	switch db {
	case "hosts", "ahosts", "ahostsv4":
		entries := c.hosts()
		show := func(h hostsEntry) {
			c.printf("%-15s %s\n", h.addr, strings.Join(h.names, " "))
		}
		if len(keys) == 0 {
			for _, h := range entries {
				show(h)
			}
			return 0
		}
		for _, k := range keys {
			found := false
			for _, h := range entries {
				if h.addr == k || slices.Contains(h.names, k) {
					show(h)
					found = true
					break
				}
			}
			if !found {
				status = 2
			}
		}
	case "passwd", "group":
		c.readDB()
		var lines []string
		match := func(line, name string, id int64, key string) bool {
			return key == name || key == strconv.FormatInt(id, 10)
		}
		type ent struct {
			line, name string
			id         int64
		}
		var ents []ent
		if db == "passwd" {
			for _, u := range c.users {
				ents = append(ents, ent{u.line, u.name, u.uid})
			}
		} else {
			for _, g := range c.groups {
				ents = append(ents, ent{g.line, g.name, g.gid})
			}
		}
		if len(keys) == 0 {
			for _, e := range ents {
				lines = append(lines, e.line)
			}
		}
		for _, k := range keys {
			found := false
			for _, e := range ents {
				if match(e.line, e.name, e.id, k) {
					lines = append(lines, e.line)
					found = true
					break
				}
			}
			if !found {
				status = 2
			}
		}
		for _, l := range lines {
			c.write(l + "\n")
		}
	default:
		c.out.Flush()
		fmt.Fprintf(c.p.Stderr(), "Unknown database: %s\nTry `getent --help' or `getent --usage' for more information.\n", db)
		return 1
	}
	return status
}
