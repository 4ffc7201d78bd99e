package programs

import "testing"

// uptime reads the node's /proc/uptime and /proc/loadavg (the simulated runtime's).
func TestUptime(t *testing.T) {
	proc := func(up string) map[string]string {
		return map[string]string{"/proc/uptime": up + " 100.00\n", "/proc/loadavg": "0.52 0.58 0.59 1/345 12345\n"}
	}
	runCases(t, []tc{
		{name: "minutes", argv: []string{"uptime"}, files: proc("359.99"), stdout: " 14:07:09 up 5 min,  0 users,  load average: 0.52, 0.58, 0.59\n"},
		{name: "hours", argv: []string{"uptime"}, files: proc("7260.00"), stdout: " 14:07:09 up  2:01,  0 users,  load average: 0.52, 0.58, 0.59\n"},
		{name: "one day", argv: []string{"uptime"}, files: proc("86400"), stdout: " 14:07:09 up 1 day, 0 min,  0 users,  load average: 0.52, 0.58, 0.59\n"},
		{name: "days", argv: []string{"uptime"}, files: proc("266400"), stdout: " 14:07:09 up 3 days,  2:00,  0 users,  load average: 0.52, 0.58, 0.59\n"},
		{name: "-s", argv: []string{"uptime", "-s"}, files: proc("3600.5"), stdout: "2024-03-05 13:07:09\n"},
		{name: "no /proc", argv: []string{"uptime"}, stdout: " 14:07:09 up 0 min,  0 users,  load average: 0.00, 0.00, 0.00\n"},
		{name: "bad option", argv: []string{"uptime", "-x"}, stderr: "uptime: invalid option -- 'x'\n" + usage("uptime"), status: 1},
	})
}
