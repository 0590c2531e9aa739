package kernelpkgs

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nic-exporter/nic_exporter/internal/testenv"
)

// madison builds apt-cache madison output from "package version" pairs,
// in the shape of testdata/madison-2026-11-28.txt.
func madison(pairs ...string) string {
	var b strings.Builder
	for _, p := range pairs {
		pkg, ver, _ := strings.Cut(p, " ")
		b.WriteString(pkg + " |  " + ver + " | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n")
	}
	return b.String()
}

func TestChoose(t *testing.T) {
	recorded, err := os.ReadFile("testdata/madison-2026-11-28.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		output string
		want   string // "" for an error
		errHas string
	}{
		{
			// The real skew of 2026-11-28: the source one revision ahead.
			name: "recorded, source newer", output: string(recorded), want: "6.1.192-2",
		},
		{
			// The cases below are constructed from the recorded shape.
			name: "headers newer",
			output: madison("linux-image-amd64 6.1.192-2", "linux-image-amd64 6.1.176-1",
				"linux-headers-amd64 6.1.192-3", "linux-headers-amd64 6.1.192-2", "linux-headers-amd64 6.1.176-1",
				"linux-source-6.1 6.1.192-2", "linux-source-6.1 6.1.176-1"),
			want: "6.1.192-2",
		},
		{
			name: "image newer",
			output: madison("linux-image-amd64 6.1.194-1", "linux-image-amd64 6.1.192-2",
				"linux-headers-amd64 6.1.192-2", "linux-source-6.1 6.1.192-2"),
			want: "6.1.192-2",
		},
		{
			name: "only one common version, the oldest",
			output: madison("linux-image-amd64 6.1.192-2", "linux-image-amd64 6.1.176-1",
				"linux-headers-amd64 6.1.192-3", "linux-headers-amd64 6.1.176-1",
				"linux-source-6.1 6.1.192-3", "linux-source-6.1 6.1.192-2", "linux-source-6.1 6.1.176-1", "linux-source-6.1 6.1.170-3"),
			want: "6.1.176-1",
		},
		{
			name: "all at one version",
			output: madison("linux-image-amd64 6.1.192-3", "linux-headers-amd64 6.1.192-3", "linux-source-6.1 6.1.192-3",
				"linux-image-amd64 6.1.176-1", "linux-headers-amd64 6.1.176-1", "linux-source-6.1 6.1.176-1"),
			want: "6.1.192-3",
		},
		{
			// Numeric, not textual order: 6.1.99 is older than 6.1.100,
			// and a backport (~bpo) older than its release.
			name: "numeric and tilde order",
			output: madison("linux-image-amd64 6.1.99-1", "linux-image-amd64 6.1.100-1~bpo12+1",
				"linux-headers-amd64 6.1.99-1", "linux-headers-amd64 6.1.100-1~bpo12+1",
				"linux-source-6.1 6.1.99-1", "linux-source-6.1 6.1.100-1~bpo12+1", "linux-source-6.1 6.1.100-1"),
			want: "6.1.100-1~bpo12+1",
		},
		{
			name: "no common version",
			output: madison("linux-image-amd64 6.1.192-2", "linux-headers-amd64 6.1.192-2",
				"linux-source-6.1 6.1.192-3"),
			errHas: "no version common",
		},
		{
			name:   "source missing (no apt-get update)",
			output: madison("linux-image-amd64 6.1.192-2", "linux-headers-amd64 6.1.192-2"),
			errHas: "no linux-source-6.1",
		},
		{
			name:   "apt warnings only",
			output: "W: Unable to read /etc/apt/sources.list.d/ - DirectoryExists (2: No such file or directory)\n",
			errHas: "no linux-image-amd64",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			av, err := ParseMadison(strings.NewReader(tt.output))
			if err != nil {
				t.Fatal(err)
			}
			c, err := Choose(av)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("Choose = %v, %v; want an error with %q", c, err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Version != tt.want {
				t.Errorf("Choose = %s, want %s", c.Version, tt.want)
			}
			if !strings.Contains(c.String(), tt.want) {
				t.Errorf("the choice does not say its version: %s", c)
			}
		})
	}
}

// TestChoiceNamesTheSkew checks that the printed choice says which newer
// versions it passed over, so a CI log shows why an older kernel runs.
func TestChoiceNamesTheSkew(t *testing.T) {
	f, err := os.Open("testdata/madison-2026-11-28.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	av, err := ParseMadison(f)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Choose(av)
	if err != nil {
		t.Fatal(err)
	}
	want := "guest kernel packages at 6.1.192-2 (linux-image-amd64, linux-headers-amd64, linux-source-6.1); newer but not common to all: linux-source-6.1 6.1.192-3"
	if c.String() != want {
		t.Errorf("choice:\n got %s\nwant %s", c, want)
	}
}

// versionPairs are ordered pairs a < b, and equal pairs, in Debian's order.
var versionPairs = []struct {
	a, b string
	want int
}{
	{"6.1.192-2", "6.1.192-3", -1},
	{"6.1.99-1", "6.1.100-1", -1},
	{"6.1.100-1~bpo12+1", "6.1.100-1", -1},
	{"1.0~rc1", "1.0", -1},
	{"1.0", "1.0+b1", -1},
	{"1.0a", "1.0+", -1},
	{"1:0.9", "2.0", 1},
	{"0:1.0", "1.0", 0},
	{"1.0-1", "1.0-1", 0},
	{"1.00", "1.0", 0},
	{"1.0", "1.0-0", 0},
	{"2.0-1", "10.0-1", -1},
	{"1.2.3", "1.2", 1},
	{"1.0~~", "1.0~", -1},
	{"1.0-1ubuntu1", "1.0-1", 1},
	{"6.1.170-3", "6.1.176-1", -1},
}

func TestCompareVersions(t *testing.T) {
	for _, p := range versionPairs {
		if got := CompareVersions(p.a, p.b); got != p.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", p.a, p.b, got, p.want)
		}
		if got := CompareVersions(p.b, p.a); got != -p.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", p.b, p.a, got, -p.want)
		}
	}
}

// TestCompareVersionsAgreesWithDpkg checks the table against dpkg
// itself, the authority on the order.
func TestCompareVersionsAgreesWithDpkg(t *testing.T) {
	_, err := exec.LookPath("dpkg")
	testenv.Require(t, err == nil, "dpkg")
	for _, p := range versionPairs {
		op := map[int]string{-1: "lt", 0: "eq", 1: "gt"}[p.want]
		if err := exec.Command("dpkg", "--compare-versions", p.a, op, p.b).Run(); err != nil {
			t.Errorf("dpkg --compare-versions %s %s %s: %v (the table is wrong)", p.a, op, p.b, err)
		}
	}
}

func TestCheckInstalled(t *testing.T) {
	const dep = "linux-headers-6.1.0-56-amd64 (= 6.1.192-2), linux-headers-6.1.0-56-common (= 6.1.192-2)"
	tests := []struct {
		name    string
		in      Installed
		release string
		errHas  string
	}{
		{"matching", Installed{Versions: map[string]string{Headers: "6.1.192-2", Source: "6.1.192-2"}, HeadersDepends: dep}, "6.1.0-56-amd64", ""},
		{"source newer", Installed{Versions: map[string]string{Headers: "6.1.192-2", Source: "6.1.192-3"}, HeadersDepends: dep}, "", "linux-source-6.1 is version 6.1.192-3 but linux-headers-amd64 is 6.1.192-2: " + InstallCommand},
		{"no source", Installed{Versions: map[string]string{Headers: "6.1.192-2"}, HeadersDepends: dep}, "", "linux-source-6.1 is not installed"},
		{"nothing", Installed{Versions: map[string]string{}}, "", "are not installed"},
		{"odd dependency", Installed{Versions: map[string]string{Headers: "6.1.192-2", Source: "6.1.192-2"}, HeadersDepends: "linux-headers-6.1.0-55-amd64 (= 6.1.190-1)"}, "", "unexpected dependency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := CheckInstalled(tt.in)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("CheckInstalled = %+v, %v; want an error with %q", k, err, tt.errHas)
				}
				return
			}
			if err != nil || k.Release != tt.release || k.Version != tt.in.Versions[Headers] {
				t.Fatalf("CheckInstalled = %+v, %v; want release %s", k, err, tt.release)
			}
		})
	}
}

func FuzzParseMadison(f *testing.F) {
	if b, err := os.ReadFile("testdata/madison-2026-11-28.txt"); err == nil {
		f.Add(string(b))
	}
	f.Add("a | 1 | x\nb|2|y\n|||\n")
	f.Fuzz(func(t *testing.T, s string) {
		av, err := ParseMadison(strings.NewReader(s))
		if err != nil {
			return
		}
		c, err := Choose(av)
		if err == nil {
			for _, p := range Packages {
				if CompareVersions(c.Version, c.Newest[p]) > 0 {
					t.Fatalf("chose %s above %s's newest %s", c.Version, p, c.Newest[p])
				}
			}
		}
	})
}
