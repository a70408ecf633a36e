package jobcontroller

import (
	"sort"
	"strconv"
	"strings"
)

// interval is the completion indexes first..last.
type interval struct{ first, last int }

// intervals is a sorted set of completion indexes, kept as disjoint,
// non-adjacent intervals: the form of status.completedIndexes,
// status.failedIndexes and successPolicy's succeededIndexes ("0-3,5,7-8").
type intervals []interval

// parseIntervals reads an index set, dropping indexes at or beyond
// completions and entries that do not parse.
//
// NOTE: as Kubernetes' parseIndexesFromString, it tolerates a corrupted
// status rather than failing the sync.
func parseIntervals(s string, completions int) intervals {
	var out intervals
	if s == "" {
		return out
	}
	for _, part := range strings.Split(s, ",") {
		bounds := strings.SplitN(part, "-", 2)
		first, err := strconv.Atoi(bounds[0])
		if err != nil || first < 0 {
			continue
		}
		if first >= completions {
			break
		}
		last := first
		if len(bounds) == 2 {
			if last, err = strconv.Atoi(bounds[1]); err != nil || last < first {
				continue
			}
			last = min(last, completions-1)
		}
		out = out.merge(intervals{{first, last}})
	}
	return out
}

// withIndexes returns the set plus the given indexes (in any order).
func (iv intervals) withIndexes(indexes []int) intervals {
	sorted := append([]int(nil), indexes...)
	sort.Ints(sorted)
	add := make(intervals, 0, len(sorted))
	for _, ix := range sorted {
		add = append(add, interval{ix, ix})
	}
	return iv.merge(add)
}

// merge returns the union of two sets.
func (iv intervals) merge(other intervals) intervals {
	var out intervals
	push := func(in interval) {
		if n := len(out); n > 0 && in.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, in.last)
			return
		}
		out = append(out, in)
	}
	i, j := 0, 0
	for i < len(iv) || j < len(other) {
		if j == len(other) || (i < len(iv) && iv[i].first < other[j].first) {
			push(iv[i])
			i++
		} else {
			push(other[j])
			j++
		}
	}
	return out
}

// has reports whether ix is in the set.
func (iv intervals) has(ix int) bool {
	k := sort.Search(len(iv), func(k int) bool { return iv[k].last >= ix })
	return k < len(iv) && iv[k].first <= ix
}

// missing returns the n lowest indexes in [0, limit) that are not in the
// set, in increasing order. It steps over the set's intervals, so its cost
// is that of the intervals and of n, not of the indexes they hold.
func (iv intervals) missing(limit, n int) []int {
	var out []int
	next := 0
	for _, in := range iv {
		for ; next < min(in.first, limit) && len(out) < n; next++ {
			out = append(out, next)
		}
		if len(out) == n || next >= limit {
			return out
		}
		next = max(next, in.last+1)
	}
	for ; next < limit && len(out) < n; next++ {
		out = append(out, next)
	}
	return out
}

// total is the number of indexes in the set.
func (iv intervals) total() int {
	n := 0
	for _, in := range iv {
		n += in.last - in.first + 1
	}
	return n
}

// overlap is how many indexes the two sets share.
func (iv intervals) overlap(other intervals) int {
	n, i, j := 0, 0, 0
	for i < len(iv) && j < len(other) {
		if o := min(iv[i].last, other[j].last) - max(iv[i].first, other[j].first) + 1; o > 0 {
			n += o
		}
		if iv[i].last < other[j].last {
			i++
		} else {
			j++
		}
	}
	return n
}

// String is the compressed form: a pair of adjacent indexes is written
// "1,2", a longer run "1-3".
//
// NOTE: Kubernetes writes completedIndexes this way ("0,2-4", "1,3").
func (iv intervals) String() string {
	var b strings.Builder
	for _, in := range iv {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(in.first))
		switch {
		case in.last == in.first+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(in.last))
		case in.last > in.first:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(in.last))
		}
	}
	return b.String()
}
