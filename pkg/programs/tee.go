package programs

func runTee(c *cmd) int {
	o, args := c.getopt("aip", nil)
	status := 0
	var outs []string
	for _, name := range args {
		if name == "-" {
			continue
		}
		err := c.writeFile(name, nil, o.Has('a'))
		if err != nil {
			c.perror(err, "%s", name)
			status = 1
			continue
		}
		outs = append(outs, name)
	}
	buf := make([]byte, 64<<10)
	in := c.p.Stdin()
	for {
		c.tick()
		n, err := in.Read(buf)
		if n > 0 {
			c.out.Write(buf[:n])
			c.out.Flush()
			for _, name := range outs {
				c.writeFile(name, buf[:n], true)
			}
		}
		if err != nil {
			break
		}
	}
	return status
}
