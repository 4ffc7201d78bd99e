// Package simulate replays a scenario file on the kubelet's loop table on a virtual clock: timed actions, timed expectations, and a deterministic timeline.
package simulate
