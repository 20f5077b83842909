package exporterset

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

func hooksRequest(t *testing.T, class, set string) (*provisioner.Request, string, error) {
	t.Helper()
	c := &vtv1alpha1.VirtualTargetClass{Spec: vtv1alpha1.VirtualTargetClassSpec{Provisioner: "fake", Parameters: &apiextensionsv1.JSON{Raw: []byte(class)}}}
	s := &vtv1alpha1.ExporterSet{Spec: vtv1alpha1.ExporterSetSpec{Parameters: &apiextensionsv1.JSON{Raw: []byte(set)}}}
	req, hooks, err := newRequest(s, c, provisioner.Images{})
	if err != nil {
		return nil, "", err
	}
	return req, hooksJSON(hooks), nil
}

// parameters.hooks is taken out before a provisioner sees the parameters, merged like any
// parameter, and part of the spec hash only when there are hooks.
func TestNewRequestTakesHooks(t *testing.T) {
	plain, none, err := hooksRequest(t, `{"arch": "x86_64", "n": 1.50, "s": "<b>"}`, `{}`)
	if err != nil || none != "" {
		t.Fatalf("no hooks: %v, %q", err, none)
	}
	req, hooks, err := hooksRequest(t,
		`{"arch": "x86_64", "n": 1.50, "s": "<b>", "hooks": {"afterLease": {"script": "exit 1", "onFailure": "endLease"}}}`,
		`{"hooks": {"afterLease": {"timeout": 5}, "beforeLease": {"script": "true"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(req.Parameters), string(plain.Parameters); got != want {
		t.Errorf("parameters without hooks %s, want %s", got, want)
	}
	if want := `{"beforeLease":{"script":"true"},"afterLease":{"script":"exit 1","timeout":5,"onFailure":"endLease"}}`; hooks != want {
		t.Errorf("merged hooks %s\nwant %s", hooks, want)
	}
	if specHash(req, hooks) == specHash(plain, none) || specHash(req, "") != specHash(plain, none) {
		t.Error("the spec hash does not follow the hooks alone")
	}
	// A set's null deletes the class's hooks.
	if _, h, err := hooksRequest(t, `{"hooks": {"afterLease": {"script": "x"}}}`, `{"hooks": null}`); err != nil || h != "" {
		t.Errorf("hooks: null = %q, %v", h, err)
	}
}

func TestNewRequestRefusesBadHooks(t *testing.T) {
	for _, tc := range []struct{ class, set, want string }{
		{`{"hooks": {"afterLease": {"script": "x", "onFailure": "endlease"}}}`, `{}`, `parameters.hooks.afterLease.onFailure is "endlease": want warn, endLease, exit`},
		{`{"hooks": {"afterLease": {"script": "x"}}}`, `{"hooks": {"afterLease": {"timeout": 0}}}`, `parameters.hooks.afterLease.timeout is 0: want a positive number of seconds`},
		{`{"hooks": {"beforeLease": {"script": "x", "retries": 3}}}`, `{}`, `parameters.hooks.beforeLease: unknown field "retries" (want exec, script, timeout, onFailure)`},
		{`{}`, `{"hooks": {"beforeLease": {"onFailure": "exit"}}}`, `parameters.hooks.beforeLease.script is missing: a hook needs a script`},
		{`{}`, `{"hooks": {"afterLease": {"script": "x", "timeout": "1m"}}}`, `parameters.hooks.afterLease.timeout: "1m" is not a number of seconds`},
		{`{}`, `{"hooks": ["x"]}`, `parameters.hooks: not a map of beforeLease and afterLease`},
	} {
		_, _, err := hooksRequest(t, tc.class, tc.set)
		if err == nil || !provisioner.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("class %s, set %s: err = %v\nwant an invalid-parameters error holding %q", tc.class, tc.set, err, tc.want)
		}
	}
}
