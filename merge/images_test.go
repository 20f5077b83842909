package merge

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func img(image, policy string) *Image { return &Image{Image: image, PullPolicy: policy} }

var testDefaults = Images{
	Exporter: img("registry/exporter:1", "IfNotPresent"),
	Runtime:  img("registry/runtime:1", "Never"),
}

func TestResolveImages(t *testing.T) {
	tests := []struct {
		name       string
		defaults   Images
		class, set *Images
		want       Images
	}{
		{
			name:     "no overrides gives defaults",
			defaults: testDefaults,
			want:     testDefaults,
		},
		{
			name:     "empty overrides give defaults",
			defaults: testDefaults,
			class:    &Images{},
			set:      &Images{},
			want:     testDefaults,
		},
		{
			name:     "class overrides default",
			defaults: testDefaults,
			class:    &Images{Exporter: img("class/exporter:2", "Always")},
			want:     Images{Exporter: img("class/exporter:2", "Always"), Runtime: testDefaults.Runtime},
		},
		{
			name:     "set overrides default",
			defaults: testDefaults,
			set:      &Images{Runtime: img("set/runtime:3", "Always")},
			want:     Images{Exporter: testDefaults.Exporter, Runtime: img("set/runtime:3", "Always")},
		},
		{
			name:     "set overrides class",
			defaults: testDefaults,
			class:    &Images{Exporter: img("class/exporter:2", "Always"), Runtime: img("class/runtime:2", "Always")},
			set:      &Images{Exporter: img("set/exporter:3", "Never"), Runtime: img("set/runtime:3", "IfNotPresent")},
			want:     Images{Exporter: img("set/exporter:3", "Never"), Runtime: img("set/runtime:3", "IfNotPresent")},
		},
		{
			name:     "roles resolve independently",
			defaults: testDefaults,
			class:    &Images{Runtime: img("class/runtime:2", "Always")},
			set:      &Images{Exporter: img("set/exporter:3", "Always")},
			want:     Images{Exporter: img("set/exporter:3", "Always"), Runtime: img("class/runtime:2", "Always")},
		},
		{
			name:     "set role nil falls back to class for that role",
			defaults: testDefaults,
			class:    &Images{Exporter: img("class/exporter:2", "Always"), Runtime: img("class/runtime:2", "Always")},
			set:      &Images{Runtime: img("set/runtime:3", "Never")},
			want:     Images{Exporter: img("class/exporter:2", "Always"), Runtime: img("set/runtime:3", "Never")},
		},
		{
			name:     "no field mixing: set pair wins whole over class policy",
			defaults: testDefaults,
			class:    &Images{Exporter: img("class/exporter:2", "Always")},
			set:      &Images{Exporter: img("set/exporter:3", "Never")},
			want:     Images{Exporter: img("set/exporter:3", "Never"), Runtime: testDefaults.Runtime},
		},
		{
			name:     "empty policy takes the default image's policy, not the class's",
			defaults: testDefaults,
			class:    &Images{Exporter: img("class/exporter:2", "Always")},
			set:      &Images{Exporter: img("set/exporter:3", "")},
			want:     Images{Exporter: img("set/exporter:3", "IfNotPresent"), Runtime: testDefaults.Runtime},
		},
		{
			name:     "empty class policy takes the default policy",
			defaults: testDefaults,
			class:    &Images{Runtime: img("class/runtime:2", "")},
			want:     Images{Exporter: testDefaults.Exporter, Runtime: img("class/runtime:2", "Never")},
		},
		{
			name:     "set with empty image is absent: class wins whole",
			defaults: testDefaults,
			class:    &Images{Exporter: img("class/exporter:2", "Always")},
			set:      &Images{Exporter: img("", "Never")},
			want:     Images{Exporter: img("class/exporter:2", "Always"), Runtime: testDefaults.Runtime},
		},
		{
			name:     "class with empty image is absent: default wins whole",
			defaults: testDefaults,
			class:    &Images{Exporter: img("", "Always")},
			want:     testDefaults,
		},
		{
			name:     "both empty images fall through to default",
			defaults: testDefaults,
			class:    &Images{Runtime: img("", "Always")},
			set:      &Images{Runtime: img("", "IfNotPresent")},
			want:     testDefaults,
		},
		{
			name:     "set with empty image over nil class gives default",
			defaults: testDefaults,
			set:      &Images{Exporter: &Image{}},
			want:     testDefaults,
		},
		{
			name:     "nil default role with no override stays nil",
			defaults: Images{Exporter: testDefaults.Exporter},
			want:     Images{Exporter: testDefaults.Exporter},
		},
		{
			name:     "nil default role: override used verbatim, empty policy stays empty",
			defaults: Images{Exporter: testDefaults.Exporter},
			class:    &Images{Runtime: img("class/runtime:2", "")},
			want:     Images{Exporter: testDefaults.Exporter, Runtime: img("class/runtime:2", "")},
		},
		{
			name:     "default with empty policy leaves chosen empty policy empty",
			defaults: Images{Exporter: img("registry/exporter:1", ""), Runtime: testDefaults.Runtime},
			set:      &Images{Exporter: img("set/exporter:3", "")},
			want:     Images{Exporter: img("set/exporter:3", ""), Runtime: testDefaults.Runtime},
		},
		{
			name:     "default with empty image is still returned",
			defaults: Images{Exporter: img("", "Always"), Runtime: testDefaults.Runtime},
			want:     Images{Exporter: img("", "Always"), Runtime: testDefaults.Runtime},
		},
		{
			name: "zero defaults and no overrides",
			want: Images{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResolveImages(tt.defaults, tt.class, tt.set)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ResolveImages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveImagesAllCombinations checks every combination of set, class and
// default states for one role against the precedence rule, and that the
// chosen image and policy always come from one source pair (or the default
// policy when the chosen one is empty).
func TestResolveImagesAllCombinations(t *testing.T) {
	type state struct {
		name   string
		images *Images
	}
	overrideStates := func(who string) []state {
		return []state{
			{"nil " + who, nil},
			{who + " without role", &Images{}},
			{who + " empty pair", &Images{Exporter: &Image{}}},
			{who + " policy only", &Images{Exporter: img("", "Always")}},
			{who + " image only", &Images{Exporter: img(who+"/exporter", "")}},
			{who + " full pair", &Images{Exporter: img(who+"/exporter", "Never")}},
		}
	}
	defaultStates := []state{
		{"no default", &Images{}},
		{"default full", &Images{Exporter: img("default/exporter", "IfNotPresent")}},
		{"default image only", &Images{Exporter: img("default/exporter", "")}},
	}
	pick := func(s state) *Image {
		if s.images == nil || s.images.Exporter == nil || s.images.Exporter.Image == "" {
			return nil
		}
		return s.images.Exporter
	}

	for _, d := range defaultStates {
		for _, c := range overrideStates("class") {
			for _, s := range overrideStates("set") {
				t.Run(d.name+"/"+c.name+"/"+s.name, func(t *testing.T) {
					def := d.images.Exporter
					var want *Image
					switch {
					case pick(s) != nil:
						want = &Image{Image: pick(s).Image, PullPolicy: pick(s).PullPolicy}
					case pick(c) != nil:
						want = &Image{Image: pick(c).Image, PullPolicy: pick(c).PullPolicy}
					case def != nil:
						want = &Image{Image: def.Image, PullPolicy: def.PullPolicy}
					}
					if want != nil && want.PullPolicy == "" && def != nil {
						want.PullPolicy = def.PullPolicy
					}
					got := ResolveImages(*d.images, c.images, s.images)
					if diff := cmp.Diff(want, got.Exporter); diff != "" {
						t.Errorf("exporter mismatch (-want +got):\n%s", diff)
					}
					if got.Runtime != nil {
						t.Errorf("runtime = %+v, want nil", got.Runtime)
					}
				})
			}
		}
	}
}

func TestResolveImagesNoAliasing(t *testing.T) {
	defaults := Images{Exporter: img("d/e", "IfNotPresent"), Runtime: img("d/r", "Never")}
	class := &Images{Exporter: img("c/e", "Always")}
	set := &Images{Runtime: img("s/r", "")}
	snapshot := func() (Images, Images, Images) {
		return Images{Exporter: img(defaults.Exporter.Image, defaults.Exporter.PullPolicy), Runtime: img(defaults.Runtime.Image, defaults.Runtime.PullPolicy)},
			Images{Exporter: img(class.Exporter.Image, class.Exporter.PullPolicy)},
			Images{Runtime: img(set.Runtime.Image, set.Runtime.PullPolicy)}
	}
	wantDefaults, wantClass, wantSet := snapshot()

	got := ResolveImages(defaults, class, set)
	for _, p := range []*Image{defaults.Exporter, defaults.Runtime, class.Exporter, set.Runtime} {
		if got.Exporter == p || got.Runtime == p {
			t.Fatalf("result shares pointer %p with an input", p)
		}
	}
	// The empty set policy was filled in the result only, not in the input.
	if diff := cmp.Diff(wantSet, *set); diff != "" {
		t.Errorf("set mutated by defaulting (-want +got):\n%s", diff)
	}

	want := Images{Exporter: img("c/e", "Always"), Runtime: img("s/r", "Never")}
	got.Exporter.Image, got.Exporter.PullPolicy = "x", "x"
	got.Runtime.Image, got.Runtime.PullPolicy = "x", "x"
	if diff := cmp.Diff(wantDefaults, defaults); diff != "" {
		t.Errorf("defaults changed through result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantClass, *class); diff != "" {
		t.Errorf("class changed through result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantSet, *set); diff != "" {
		t.Errorf("set changed through result (-want +got):\n%s", diff)
	}

	got = ResolveImages(defaults, class, set)
	defaults.Exporter.Image, defaults.Runtime.PullPolicy = "y", "y"
	class.Exporter.Image, set.Runtime.Image = "y", "y"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result changed through inputs (-want +got):\n%s", diff)
	}

	// Defaults alone are copied too, not returned as the same pointers.
	fresh := Images{Exporter: img("d/e", "IfNotPresent")}
	if got := ResolveImages(fresh, nil, nil); got.Exporter == fresh.Exporter {
		t.Errorf("default returned by pointer")
	}
}
