package kuberuntime

import (
	"k8s.io/apimachinery/pkg/types"
)

// keptLogs stands for the pod log directories upstream's kubelet leaves behind when a
// restart of all containers removes the containers but keeps their logs
// ({attempt}.log files): a container started with no instance left in the runtime takes
// its attempt from the newest kept log, plus one (calcRestartCountByLogDir). The simulator
// writes no log files, so it keeps that count per pod and container name until the pod's
// content is garbage collected, as upstream removes the directory. The node's owner is
// its one caller (the pod syncs and the container GC), so it has no lock.
type keptLogs struct {
	byPod map[types.UID]map[string]int // container name -> next attempt
}

// keep records that an instance with attempt was removed with its log kept.
func (l *keptLogs) keep(uid types.UID, name string, attempt int) {
	if l.byPod == nil {
		l.byPod = map[types.UID]map[string]int{}
	}
	pod := l.byPod[uid]
	if pod == nil {
		pod = map[string]int{}
		l.byPod[uid] = pod
	}
	pod[name] = max(pod[name], attempt+1)
}

// restartCount is the attempt the kept logs give a new instance of the container: 0 when
// none is kept.
func (l *keptLogs) restartCount(uid types.UID, name string) int {
	return l.byPod[uid][name]
}

// forget drops the pods for which remove says true (their log directories are removed).
func (l *keptLogs) forget(remove func(types.UID) bool) {
	for uid := range l.byPod {
		if remove(uid) {
			delete(l.byPod, uid)
		}
	}
}
