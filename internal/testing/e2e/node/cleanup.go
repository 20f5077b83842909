package node

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Teardown removes everything a node under state left on the machine: the daemons and
// containerd shims whose command line names state, the processes in the kubelet's cgroup
// tree (containers), the mounts
// under state (Secret tmpfs, overlay roots, network namespaces), the cgroups and the bridge.
// It touches nothing that another containerd or kubelet made: each step is keyed to state,
// CgroupRoot or BridgeName. It is safe to run again, and before a start to clear a run that
// was killed hard.
func Teardown(state string) error {
	var errs []error
	if err := killProcessesOf(state); err != nil {
		errs = append(errs, err)
	}
	killCgroupTree()
	if err := unmountUnder(state); err != nil {
		errs = append(errs, err)
	}
	removeCgroupTree()
	removeDevicePluginSockets()
	if _, err := os.Stat(filepath.Join("/sys/class/net", BridgeName)); err == nil {
		if out, err := exec.Command("ip", "link", "del", BridgeName).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %s: %v: %s", BridgeName, err, out))
		}
	}
	if err := os.RemoveAll(state); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// cgroupDirs lists CgroupRoot and every cgroup below it in hierarchy h, deepest first.
func cgroupDirs(h string) []string {
	root := filepath.Join("/sys/fs/cgroup", h, CgroupRoot)
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	return dirs
}

// killCgroupTree SIGKILLs every process in the kubelet's Pod cgroups until none is left.
func killCgroupTree() {
	for range 50 {
		found := false
		for _, dir := range cgroupDirs("pids") {
			b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					found = true
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if !found {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeCgroupTree removes the (now empty) cgroups under CgroupRoot.
func removeCgroupTree() {
	for _, h := range cgroupHierarchies {
		for _, dir := range cgroupDirs(h) {
			_ = os.Remove(dir)
		}
	}
}

// killProcessesOf kills every process (but this one) whose command line names state: the
// daemons of a run that died without stopping them, and the containerd shims, which run in
// sessions of their own and so outlive containerd.
func killProcessesOf(state string) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	self := os.Getpid()
	needle := []byte(state)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if bytes.Contains(b, needle) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return nil
}

// unmountUnder unmounts every mount point at or below dir, deepest first (lazily, so a
// mount still busy for a moment does not stop the cleanup).
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			points = append(points, mp)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, mp := range points {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
		}
	}
	return errors.Join(errs...)
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
