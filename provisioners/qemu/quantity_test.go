package qemu

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQemuSize(t *testing.T) {
	for _, tc := range []struct {
		bytes int64
		want  string
	}{
		{4 * gibi, "4G"},
		{1536 * mebi, "1536M"},
		{512 * mebi, "512M"},
		{1024 * gibi, "1024G"},
		{10_000_000_000, "9765625K"}, // Kubernetes' 10G is decimal
		{1_000_001_536, "976564K"},
		{1_000_000_001, "1000000001"},
	} {
		if got := qemuSize(tc.bytes); got != tc.want {
			t.Errorf("qemuSize(%d) = %q, want %q", tc.bytes, got, tc.want)
		}
	}
}

func TestParseQuantityAcceptsNumbersAndStrings(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want int64
	}{
		{json.Number("2"), 2},
		{json.Number("2.0"), 2},
		{json.Number("1e3"), 1000},
		{json.Number("1.0e+3"), 1000},
		{"2Gi", 2 * gibi},
		{"0.5Gi", gibi / 2},
		{"1E3", 1000},
		{"1E", 1_000_000_000_000_000_000}, // exa, not an exponent
	} {
		q, err := parseQuantity(parametersPath, tc.in)
		if err != nil {
			t.Errorf("parseQuantity(%v): %v", tc.in, err)
			continue
		}
		if got := q.Value(); got != tc.want {
			t.Errorf("parseQuantity(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestQuantityInRange(t *testing.T) {
	got := map[string]bool{}
	for _, s := range []string{"2Gi", "1e30", "1e31", "5E-30", "5E-31", "1E", "1e1000000000", string(make([]byte, 65))} {
		got[s] = quantityInRange(s)
	}
	want := map[string]bool{
		"2Gi": true, "1e30": true, "1e31": false, "5E-30": true, "5E-31": false, "1E": true,
		"1e1000000000": false, string(make([]byte, 65)): false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestVolumeBytes(t *testing.T) {
	for _, tc := range []struct {
		storage, overhead, want int64
	}{
		{20 * gibi, 10, 22 * gibi},
		{20 * gibi, 0, 20 * gibi},
		{mebi, 100, 2 * mebi},
		{mebi + 512, 0, 2 * mebi},     // rounded up to a whole MiB
		{16 * gibi, 10, 18023 * mebi}, // 17.6Gi, rounded up
		{pebi, 100, 2 * pebi},         // the largest accepted, no overflow
	} {
		p := parameters{storage: tc.storage, fsOverheadPercent: tc.overhead}
		if got := p.volumeBytes(); got != tc.want {
			t.Errorf("volumeBytes(%d, %d%%) = %d, want %d", tc.storage, tc.overhead, got, tc.want)
		}
	}
}
