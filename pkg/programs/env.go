package programs

import (
	"strings"

	"github.com/minikubelet/minikubelet/pkg/programs/internal/getopt"
)

func runEnv(c *cmd) int {
	o, args := c.getopt("+i0u:", []getopt.Long{
		{Name: "ignore-environment", Key: 'i'}, {Name: "null", Key: '0'}, {Name: "unset=", Key: 'u'},
	})
	env := c.environ()
	if len(args) > 0 && args[0] == "-" {
		o.Imply('i')
		args = args[1:]
	}
	if o.Has('i') {
		env = []string{}
	}
	for _, name := range o.Vals('u') {
		env = setenv(env, name)
	}
	for len(args) > 0 && strings.Contains(args[0], "=") {
		env = setenv(env, args[0])
		args = args[1:]
	}
	if len(args) > 0 {
		return c.execute(args, env)
	}
	end := "\n"
	if o.Has('0') {
		end = "\x00"
	}
	for _, e := range env {
		c.write(e + end)
	}
	return 0
}

func runPrintenv(c *cmd) int {
	env := c.environ()
	if len(c.args) == 0 {
		for _, e := range env {
			c.write(e + "\n")
		}
		return 0
	}
	status := 0
	for _, name := range c.args {
		found := false
		for _, e := range env {
			if k, v, _ := strings.Cut(e, "="); k == name {
				c.write(v + "\n")
				found = true
				break
			}
		}
		if !found {
			status = 1
		}
	}
	return status
}
