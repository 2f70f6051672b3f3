package releasecheck

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kdupcap/kdupcap/internal/testenv"
)

// liveCaps are the only capabilities live needs: the AF_PACKET socket
// (CAP_NET_RAW) and its filter, ring and promiscuous mode (CAP_NET_ADMIN).
var liveCaps = []string{"NET_ADMIN", "NET_RAW"}

// liveArgs are the arguments the DaemonSet runs kdupcap with.
var liveArgs = []string{"live", "-i", "any", "--port", "9092", "--format", "json", "--metrics", ":9464"}

// readFile is the repository's file name, from the module root.
func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServiceUnit reads the deb's and rpm's systemd unit for what it runs
// and the privileges it keeps: live as a user of its own, with only the two
// capabilities, no way to gain more, the system read-only; and the
// variables it takes from the EnvironmentFile are the ones the default file
// sets.
func TestServiceUnit(t *testing.T) {
	unit := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(readFile(t, "packaging/kdupcap-live.service")))
	section := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("kdupcap-live.service: line %q is not KEY=VALUE", line)
			}
			unit[section+"."+k] = append(unit[section+"."+k], v)
		}
	}
	one := func(key string) string {
		if v := unit[key]; len(v) == 1 {
			return v[0]
		}
		t.Errorf("kdupcap-live.service: %s set %d times, want once", key, len(unit[key]))
		return ""
	}
	caps := func(key string) []string {
		var cs []string
		for _, c := range strings.Fields(one(key)) {
			cs = append(cs, strings.TrimPrefix(c, "CAP_"))
		}
		slices.Sort(cs)
		return cs
	}
	for _, key := range []string{"Service.AmbientCapabilities", "Service.CapabilityBoundingSet"} {
		if got := caps(key); !slices.Equal(got, liveCaps) {
			t.Errorf("%s = %v, want %v", key, got, liveCaps)
		}
	}
	for key, want := range map[string]string{
		"Service.DynamicUser":     "yes",
		"Service.NoNewPrivileges": "yes",
		"Service.ProtectSystem":   "strict",
		"Service.ProtectHome":     "yes",
		"Service.EnvironmentFile": "-/etc/default/kdupcap",
		"Service.ExecStart":       "/usr/bin/kdupcap live -i ${KDUPCAP_INTERFACE} $KDUPCAP_FLAGS",
		"Install.WantedBy":        "multi-user.target",
	} {
		if got := one(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if _, ok := unit["Service.User"]; ok {
		t.Error("kdupcap-live.service sets User=: DynamicUser gives it a user of its own")
	}

	defaults := readFile(t, "packaging/kdupcap.default")
	for _, v := range []string{"KDUPCAP_INTERFACE", "KDUPCAP_FLAGS"} {
		if !regexp.MustCompile(`(?m)^` + v + `=\S`).MatchString(defaults) {
			t.Errorf("packaging/kdupcap.default sets no %s, which ExecStart uses", v)
		}
	}
}

// TestDaemonSet parses the DaemonSet with PyYAML (Debian's python3-yaml;
// kdupcap's module has no YAML library) and checks the pod a broker node
// runs: the host's network, not root, every capability dropped but the
// two, a read-only root, limits, and the metrics port Prometheus scrapes.
func TestDaemonSet(t *testing.T) {
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import yaml").Run(); err != nil {
		testenv.Unavailable(t, "%s with PyYAML (python3-yaml) not installed: %v", python, err)
	}
	out, err := exec.Command(python, "-c",
		"import json, sys, yaml; json.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)",
		filepath.Join(root, "deploy/kubernetes/daemonset.yaml")).Output()
	if err != nil {
		t.Fatalf("daemonset.yaml does not parse as YAML: %v: %s", err, stderrOf(err))
	}
	var docs []struct {
		Kind string `json:"kind"`
		Spec struct {
			Template struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
				Spec struct {
					HostNetwork     bool              `json:"hostNetwork"`
					NodeSelector    map[string]string `json:"nodeSelector"`
					Tolerations     []map[string]any  `json:"tolerations"`
					SecurityContext struct {
						RunAsNonRoot *bool `json:"runAsNonRoot"`
						RunAsUser    *int  `json:"runAsUser"`
					} `json:"securityContext"`
					Containers []struct {
						Args  []string `json:"args"`
						Ports []struct {
							Name          string `json:"name"`
							ContainerPort int    `json:"containerPort"`
						} `json:"ports"`
						SecurityContext struct {
							RunAsNonRoot             *bool `json:"runAsNonRoot"`
							Privileged               *bool `json:"privileged"`
							AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
							ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
							Capabilities             struct {
								Add  []string `json:"add"`
								Drop []string `json:"drop"`
							} `json:"capabilities"`
						} `json:"securityContext"`
						Resources struct {
							Limits map[string]any `json:"limits"`
						} `json:"resources"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(out, &docs); err != nil {
		t.Fatalf("daemonset.yaml as JSON: %v", err)
	}
	var n int
	for _, d := range docs {
		if d.Kind != "DaemonSet" {
			continue
		}
		n++
		pod := d.Spec.Template.Spec
		if !pod.HostNetwork {
			t.Error("hostNetwork is not true: the pod would sniff its own network namespace, not the broker's")
		}
		if len(pod.NodeSelector) == 0 || len(pod.Tolerations) == 0 {
			t.Error("no nodeSelector or tolerations for the broker nodes")
		}
		if !isTrue(pod.SecurityContext.RunAsNonRoot) || pod.SecurityContext.RunAsUser == nil || *pod.SecurityContext.RunAsUser == 0 {
			t.Error("the pod's securityContext does not run as a user that is not root")
		}
		if len(pod.Containers) != 1 {
			t.Fatalf("%d containers, want 1", len(pod.Containers))
		}
		c := pod.Containers[0]
		if !slices.Equal(c.Args, liveArgs) {
			t.Errorf("args %q, want %q", c.Args, liveArgs)
		}
		sc := c.SecurityContext
		add := slices.Sorted(slices.Values(sc.Capabilities.Add))
		if !slices.Equal(add, liveCaps) || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
			t.Errorf("capabilities add %v drop %v, want add %v drop [ALL]", sc.Capabilities.Add, sc.Capabilities.Drop, liveCaps)
		}
		if !isTrue(sc.RunAsNonRoot) || !isTrue(sc.ReadOnlyRootFilesystem) || sc.Privileged == nil || *sc.Privileged {
			t.Error("the container is not runAsNonRoot, readOnlyRootFilesystem and privileged: false")
		}
		// The image's binary has file capabilities, which no_new_privs
		// (allowPrivilegeEscalation: false) would make the kernel ignore.
		if !isTrue(sc.AllowPrivilegeEscalation) {
			t.Error("allowPrivilegeEscalation is not true: the binary's file capabilities would be ignored")
		}
		if c.Resources.Limits["cpu"] == nil || c.Resources.Limits["memory"] == nil {
			t.Errorf("resources.limits %v, want cpu and memory", c.Resources.Limits)
		}
		port := strings.TrimPrefix(liveArgs[slices.Index(liveArgs, "--metrics")+1], ":")
		if len(c.Ports) != 1 || c.Ports[0].Name != "metrics" || strconv.Itoa(c.Ports[0].ContainerPort) != port {
			t.Errorf("ports %+v, want one named metrics on --metrics' port %s", c.Ports, port)
		}
		if got := d.Spec.Template.Metadata.Annotations["prometheus.io/port"]; got != port {
			t.Errorf("prometheus.io/port annotation %q, want --metrics' %s", got, port)
		}
	}
	if n != 1 {
		t.Errorf("daemonset.yaml holds %d DaemonSets, want 1", n)
	}
}

// TestDockerfile reads the image definition: a static build, the file
// capabilities live needs, an empty base and a user that is not root, and
// the Go version go.mod asks for.
func TestDockerfile(t *testing.T) {
	df := readFile(t, "Dockerfile")
	stages := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(stages) == 0 || stages[len(stages)-1][1] != "scratch" {
		t.Errorf("the image's last stage is %v, want FROM scratch", stages)
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(users) != 1 {
		t.Fatalf("%d USER lines, want 1", len(users))
	}
	if u, _, _ := strings.Cut(users[0][1], ":"); u == "0" || u == "root" || u == "" {
		t.Errorf("USER %s: want a user that is not root", users[0][1])
	}
	for _, want := range []string{"CGO_ENABLED=0", "setcap cap_net_raw,cap_net_admin+ep", "--cap-add NET_RAW --cap-add NET_ADMIN", "--network host"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile has no %q", want)
		}
	}
	goMod := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, "go.mod"))
	goArg := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)`).FindStringSubmatch(df)
	if goMod == nil || goArg == nil || goArg[1] != goMod[1] {
		t.Errorf("Dockerfile's GO_VERSION %v, want go.mod's %v", goArg, goMod)
	}
}

// isTrue says whether b is set and true.
func isTrue(b *bool) bool { return b != nil && *b }

// stderrOf is the standard error an *exec.ExitError kept, if any.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
