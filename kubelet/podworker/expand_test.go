package podworker

import "testing"

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "B": "y z", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	tests := map[string]struct{ in, want string }{
		"plain":           {"hello", "hello"},
		"one":             {"$(A)", "x"},
		"two":             {"$(A)-$(B)", "x-y z"},
		"undefined kept":  {"$(NOPE)", "$(NOPE)"},
		"escaped":         {"$$(A)", "$(A)"},
		"double dollar":   {"a$$b", "a$b"},
		"lone dollar":     {"cost $5", "cost $5"},
		"trailing dollar": {"x$", "x$"},
		"unclosed":        {"$(A", "$(A"},
		"empty value":     {"[$(EMPTY)]", "[]"},
		"shell var kept":  {"$HOME", "$HOME"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := expand(tc.in, lookup); got != tc.want {
				t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
