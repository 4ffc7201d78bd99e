// Package record is the flight recorder: it writes what comes into a node from outside (manifest files, faults, the API server's pods, the shutdown signal), at the instants it arrives, as a scenario that simulate replays.
package record
