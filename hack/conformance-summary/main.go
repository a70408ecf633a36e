// Command conformance-summary turns the JUnit report of an e2e.test run
// (ginkgo's, as the e2e framework writes it to junit_01.xml) into a
// Markdown summary: the counts, then one row per spec that ran — its name,
// its result and the first line of its failure or skip reason. Specs the
// focus left out are not listed, nor the suite's setup unless it failed.
//
//	conformance-summary build/conformance/junit_01.xml > summary.md
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance-summary JUNIT.xml")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	specs, err := readReport(f)
	if err != nil {
		fmt.Fprintf(os.Stderr, "reading %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	writeSummary(os.Stdout, specs)
}

// junitSuites is the part of ginkgo's JUnit report the summary reads.
type junitSuites struct {
	Suites []struct {
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string  `xml:"name,attr"`
	Status  string  `xml:"status,attr"`
	Time    float64 `xml:"time,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// spec is one row of the summary.
type spec struct {
	Name    string
	Result  string // passed, failed, skipped (at run time)
	Seconds float64
	Detail  string // the first line of the failure or of the skip's reason
}

// readReport returns the specs that ran, in the report's order, and the
// suite's setup nodes that failed. A spec the
// focus or skip expression left out is reported by ginkgo as skipped with
// the bare message "skipped"; one that skipped itself says why after
// "skipped - ".
func readReport(r io.Reader) ([]spec, error) {
	var doc junitSuites
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, err
	}
	var specs []spec
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			name, isSpec := strings.CutPrefix(c.Name, "[It] ")
			if !isSpec && c.Status == "passed" {
				continue // the suite's own setup ([SynchronizedBeforeSuite], …) is listed when it fails
			}
			row := spec{Name: name, Result: c.Status, Seconds: c.Time}
			switch {
			case c.Failure != nil:
				row.Detail = firstLine(c.Failure.Message + "\n" + c.Failure.Text)
			case c.Error != nil:
				row.Detail = firstLine(c.Error.Message + "\n" + c.Error.Text)
			case c.Skipped != nil:
				reason, ok := strings.CutPrefix(c.Skipped.Message, "skipped - ")
				if !ok {
					continue // not selected
				}
				row.Detail = firstLine(reason)
			}
			specs = append(specs, row)
		}
	}
	return specs, nil
}

// firstLine is the first non-empty line of s, without ginkgo's "[FAILED] "
// marker, short enough for a table cell.
func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "[FAILED]"))
		if line == "" {
			continue
		}
		if len(line) > 200 {
			line = line[:200] + "…"
		}
		return line
	}
	return ""
}

// writeSummary prints the counts, then the table (failures first, so that
// they are what a reader sees).
func writeSummary(w io.Writer, specs []spec) {
	counts := map[string]int{}
	for _, s := range specs {
		counts[s.Result]++
	}
	fmt.Fprintf(w, "%d specs ran: %d passed, %d failed, %d skipped at run time\n\n",
		len(specs), counts["passed"], counts["failed"]+counts["error"]+counts["panicked"]+counts["timedout"]+counts["interrupted"], counts["skipped"])
	fmt.Fprintln(w, "| Spec | Result | Seconds | First error |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, pass := range []bool{false, true} {
		for _, s := range specs {
			if (s.Result == "passed") != pass {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %s |\n", cell(s.Name), s.Result, s.Seconds, cell(s.Detail))
		}
	}
}

// cell escapes what would break a Markdown table row.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
