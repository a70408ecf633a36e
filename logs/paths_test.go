package logs

import "testing"

func TestPaths(t *testing.T) {
	if got, want := PodDir("/var/lib/skiff/logs", "default", "job-a-x7k2p", "0a1b"), "/var/lib/skiff/logs/default_job-a-x7k2p_0a1b"; got != want {
		t.Errorf("PodDir = %q, want %q", got, want)
	}
	if got, want := Path("/var/lib/skiff/logs", "default", "job-a-x7k2p", "0a1b", "main", 3), "/var/lib/skiff/logs/default_job-a-x7k2p_0a1b/main/3.log"; got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
}
