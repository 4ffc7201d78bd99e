// Package podsource turns static pod manifests in a directory into pods (the kubelet's file source) and merges per-source snapshots into the ADD/UPDATE/REMOVE/DELETE/RECONCILE updates the sync loop consumes.
package podsource
