package leasehook

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/exporterset/exporterset/internal/exportercfg"
)

func ptr[T any](v T) *T { return &v }

func TestRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "check.sh")
	if err := os.WriteFile(file, []byte("echo from-file $LEASE_NAME\nexit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		hook exportercfg.Hook
		want string
		out  string
	}{
		{"success", exportercfg.Hook{Script: "echo hi $LEASE_NAME"}, "", "hi l-1\n"},
		{"exit 1", exportercfg.Hook{Script: "exit 1"}, "Hook failed with exit code 1", ""},
		{"multi-line", exportercfg.Hook{Script: "true\nexit 7\n"}, "Hook failed with exit code 7", ""},
		{"blank", exportercfg.Hook{Script: "  \n"}, "", ""},
		{"exec", exportercfg.Hook{Exec: "/bin/bash", Script: "[[ -n $BASH_VERSION ]] && echo bash"}, "", "bash\n"},
		{"file", exportercfg.Hook{Script: file + "\n"}, "Hook failed with exit code 3", "from-file l-1\n"},
		{"no interpreter", exportercfg.Hook{Exec: filepath.Join(dir, "nope"), Script: "true"}, "Error executing hook: fork/exec " + filepath.Join(dir, "nope") + ": no such file or directory", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			if got := Run(context.Background(), &tc.hook, []string{"LEASE_NAME=l-1"}, &out); got != tc.want {
				t.Errorf("Run = %q, want %q", got, tc.want)
			}
			if out.String() != tc.out {
				t.Errorf("output %q, want %q", out.String(), tc.out)
			}
		})
	}
}

// A hook that outlives its timeout is ended, children included, and reported as upstream
// words it.
func TestRunTimeout(t *testing.T) {
	start := time.Now()
	got := Run(context.Background(), &exportercfg.Hook{Script: "sleep 30 & sleep 30", Timeout: ptr(1)}, nil, nil)
	if want := "Hook timed out after 1 seconds"; got != want {
		t.Errorf("Run = %q, want %q", got, want)
	}
	if d := time.Since(start); d < time.Second || d > 4*time.Second {
		t.Errorf("took %s, want about the 1 s timeout", d)
	}
}

func TestReports(t *testing.T) {
	fail := "Hook failed with exit code 1"
	for _, tc := range []struct {
		o    Outcome
		want []Report
	}{
		{Outcome{Kind: Before}, []Report{{StatusLeaseReady, "Ready for commands"}}},
		{Outcome{Kind: After}, []Report{{StatusAvailable, "Available for new lease"}}},
		{Outcome{Before, fail, exportercfg.OnFailureWarn}, []Report{{StatusLeaseReady, "[HOOK_WARNING] beforeLease hook warning: " + fail}}},
		{Outcome{After, fail, exportercfg.OnFailureWarn}, []Report{{StatusAvailable, "[HOOK_WARNING] afterLease hook warning: " + fail}}},
		{Outcome{Before, fail, exportercfg.OnFailureEndLease}, []Report{{StatusBeforeLeaseHookFailed, "beforeLease hook failed (on_failure=endLease): " + fail}}},
		{Outcome{After, fail, exportercfg.OnFailureEndLease}, []Report{{StatusAfterLeaseHookFailed, "afterLease hook failed (on_failure=endLease): " + fail}}},
		{Outcome{Before, fail, exportercfg.OnFailureExit}, []Report{
			{StatusBeforeLeaseHookFailed, "beforeLease hook failed (on_failure=exit, shutting down): " + fail},
			{StatusOffline, "Exporter shutting down due to beforeLease hook failure"}}},
		{Outcome{After, fail, exportercfg.OnFailureExit}, []Report{
			{StatusAfterLeaseHookFailed, "afterLease hook failed (on_failure=exit, shutting down): " + fail},
			{StatusOffline, "Exporter shutting down due to afterLease hook failure"}}},
	} {
		if diff := cmp.Diff(tc.want, tc.o.Reports()); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.o, diff)
		}
	}
	if r := Before.Running(); r != (Report{StatusBeforeLeaseHook, "Running beforeLease hook"}) {
		t.Errorf("Before.Running = %+v", r)
	}
	if r := After.Running(); r != (Report{StatusAfterLeaseHook, "Running afterLease hooks"}) {
		t.Errorf("After.Running = %+v", r)
	}
}
