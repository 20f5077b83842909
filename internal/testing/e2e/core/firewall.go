package core

import (
	"fmt"
	"os/exec"
	"strings"
)

// firewallComment tags the tier's iptables rules, so that a run killed hard leaves rules a
// later run (or a person) can find.
const firewallComment = "exporterset-e2e-core"

// firewallRules keep the gRPC port, which upstream opens on every interface, to loopback and
// the Pods' bridge: in order, accept from lo, accept from bridge, drop the rest.
func firewallRules(bridge string) [][]string {
	base := []string{"INPUT", "-p", "tcp", "--dport", fmt.Sprint(GRPCPort), "-m", "comment", "--comment", firewallComment}
	return [][]string{
		append(append([]string{}, base...), "-i", "lo", "-j", "ACCEPT"),
		append(append([]string{}, base...), "-i", bridge, "-j", "ACCEPT"),
		append(append([]string{}, base...), "-j", "DROP"),
	}
}

// openFirewall appends the rules to INPUT (after removing any an earlier run left).
func openFirewall(bridge string) error {
	closeFirewall(bridge)
	for _, r := range firewallRules(bridge) {
		if out, err := exec.Command("iptables", append([]string{"-w", "-A"}, r...)...).CombinedOutput(); err != nil {
			closeFirewall(bridge)
			return fmt.Errorf("iptables -A %s: %v: %s", strings.Join(r, " "), err, out)
		}
	}
	return nil
}

// CloseFirewall removes the rules a run left (for the tier's teardown after a hard kill).
func CloseFirewall(bridge string) { closeFirewall(bridge) }

// closeFirewall removes the rules (each as often as it is there).
func closeFirewall(bridge string) {
	for _, r := range firewallRules(bridge) {
		for exec.Command("iptables", append([]string{"-w", "-D"}, r...)...).Run() == nil {
		}
	}
}
