package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// TokenFile is kube-apiserver's --token-auth-file: static bearer tokens,
// one CSV record each: token,user,uid[,"group1,group2"].
type TokenFile struct {
	entries []tokenEntry
}

// tokenEntry keeps a token's digest, so that every comparison is between
// equal-length values.
type tokenEntry struct {
	digest [sha256.Size]byte
	user   authenticationv1.UserInfo
}

var _ TokenAuthenticator = (*TokenFile)(nil)

// LoadTokenFile reads a token file as kube-apiserver does: records of at
// least three fields; a record with an empty token is skipped; a later
// record of the same token replaces the earlier one.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tf, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("token file %q: %w", path, err)
	}
	return tf, nil
}

// ParseTokenFile reads token file records from r (see LoadTokenFile).
func ParseTokenFile(r io.Reader) (*TokenFile, error) {
	reader := csv.NewReader(r)
	reader.FieldsPerRecord = -1
	byToken := map[[sha256.Size]byte]int{}
	tf := &TokenFile{}
	for {
		record, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return tf, nil
		}
		if err != nil {
			return nil, err
		}
		if len(record) < 3 {
			return nil, fmt.Errorf("must have at least 3 columns (token, user name, user uid), found %d", len(record))
		}
		if record[0] == "" {
			continue
		}
		e := tokenEntry{digest: sha256.Sum256([]byte(record[0])),
			user: authenticationv1.UserInfo{Username: record[1], UID: record[2]}}
		if len(record) >= 4 {
			e.user.Groups = strings.Split(record[3], ",")
		}
		if i, dup := byToken[e.digest]; dup {
			tf.entries[i] = e
			continue
		}
		byToken[e.digest] = len(tf.entries)
		tf.entries = append(tf.entries, e)
	}
}

// AuthenticateToken returns the user of token if the file has it. Every
// entry is compared, in constant time, so that the answer's timing says
// nothing about how close a guess came.
func (f *TokenFile) AuthenticateToken(_ context.Context, token string) (authenticationv1.UserInfo, bool, error) {
	digest := sha256.Sum256([]byte(token))
	found := -1
	for i := range f.entries {
		if subtle.ConstantTimeCompare(digest[:], f.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return authenticationv1.UserInfo{}, false, nil
	}
	u := f.entries[found].user
	u.Groups = append([]string(nil), u.Groups...)
	return u, true, nil
}
