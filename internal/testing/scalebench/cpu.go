package scalebench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on every Linux
// architecture Go runs the benchmark on.
const clockTicks = 100

// procStat returns the parent pid and user+system CPU seconds of pid from /proc/<pid>/stat.
func procStat(pid int) (ppid int, cpu float64, comm string, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, "", err
	}
	s := string(b)
	// comm is in parentheses and may hold spaces; the fields after it are fixed.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, 0, "", fmt.Errorf("bad /proc/%d/stat", pid)
	}
	comm = s[open+1 : end]
	f := strings.Fields(s[end+1:])
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15.
	if len(f) < 13 {
		return 0, 0, "", fmt.Errorf("short /proc/%d/stat", pid)
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return ppid, (ut + st) / clockTicks, comm, nil
}

// cpuSeconds is the CPU time pid has used (0 when it cannot be read).
func cpuSeconds(pid int) float64 {
	_, cpu, _, err := procStat(pid)
	if err != nil {
		return 0
	}
	return cpu
}

// cpuMeter reads the CPU time of the processes that share the machine in a run: the
// control plane (kube-apiserver and etcd, children of this process), this process (the
// simulator and the benchmark's watches) and the controller under test.
type cpuMeter struct{ controlPlane []int }

func newCPUMeter() *cpuMeter {
	m := &cpuMeter{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		ppid, _, comm, err := procStat(pid)
		if err == nil && ppid == self && (comm == "kube-apiserver" || comm == "etcd") {
			m.controlPlane = append(m.controlPlane, pid)
		}
	}
	return m
}

// cpuSample is the CPU seconds used so far by each party.
type cpuSample struct{ controlPlane, bench, controller float64 }

func (m *cpuMeter) sample(controllerPID int) cpuSample {
	var s cpuSample
	for _, pid := range m.controlPlane {
		s.controlPlane += cpuSeconds(pid)
	}
	s.bench = cpuSeconds(os.Getpid())
	s.controller = cpuSeconds(controllerPID)
	return s
}

// CPU is the CPU time used during one run, in seconds.
type CPU struct {
	// Controller is the controller under test.
	Controller float64 `json:"controller"`
	// ControlPlane is kube-apiserver and etcd.
	ControlPlane float64 `json:"controlPlane"`
	// Simulator is the benchmark process: the simulated Jumpstarter core, kubelet and garbage
	// collector, and the benchmark's own watches.
	Simulator float64 `json:"simulator"`
}

func (m *cpuMeter) since(a cpuSample, controllerPID int) CPU {
	b := m.sample(controllerPID)
	return CPU{Controller: b.controller - a.controller, ControlPlane: b.controlPlane - a.controlPlane, Simulator: b.bench - a.bench}
}
