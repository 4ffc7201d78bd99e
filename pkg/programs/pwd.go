package programs

func runPwd(c *cmd) int {
	c.getopt("LP", nil) // the directory is always the logical one here
	c.write(c.p.Dir() + "\n")
	return 0
}
