// Checks troth's signed checkpoints and proofs with the reference implementations:
// golang.org/x/mod/sumdb/note (C2SP signed notes) and golang.org/x/mod/sumdb/tlog
// (RFC 6962 trees). Reads one JSON request on stdin, writes one JSON answer on stdout:
// for each item "ok" or the reference's error. Built by tests/service/test_reference_verifiers.py,
// with reference_cosignature.go beside it (transparency-dev's cosignature/v1 verifier).
package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type request struct {
	Keys        []string      `json:"keys"`
	Cosigners   []string      `json:"cosigners"`
	Notes       []noteCheck   `json:"notes"`
	Inclusion   []inclusion   `json:"inclusion"`
	Consistency []consistency `json:"consistency"`
}

type noteCheck struct {
	Note    string `json:"note"`
	Signers int    `json:"signers"`
}

type inclusion struct {
	Note      string   `json:"note"`
	Index     int64    `json:"index"`
	EntryHash string   `json:"entry_hash"`
	Proof     []string `json:"proof"`
}

type consistency struct {
	Old   string   `json:"old"`
	New   string   `json:"new"`
	Proof []string `json:"proof"`
}

type checkpoint struct {
	origin string
	size   int64
	root   tlog.Hash
}

var verifiers note.Verifiers

func open(msg string, signers int) (checkpoint, error) {
	n, err := note.Open([]byte(msg), verifiers)
	if err != nil {
		return checkpoint{}, err
	}
	if signers > 0 && len(n.Sigs) != signers {
		return checkpoint{}, fmt.Errorf("%d verified signatures, want %d", len(n.Sigs), signers)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[0] == "" || lines[len(lines)-1] != "" {
		return checkpoint{}, errors.New("not a tlog-checkpoint body")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || strconv.FormatInt(size, 10) != lines[1] {
		return checkpoint{}, errors.New("bad tree size")
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return checkpoint{}, errors.New("bad root hash")
	}
	var h tlog.Hash
	copy(h[:], root)
	return checkpoint{lines[0], size, h}, nil
}

func hashes(list []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(list))
	for i, s := range list {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != tlog.HashSize {
			return nil, errors.New("bad proof hash")
		}
		copy(out[i][:], b)
	}
	return out, nil
}

func result(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

func checkInclusion(c inclusion) error {
	cp, err := open(c.Note, 0)
	if err != nil {
		return err
	}
	data, err := hex.DecodeString(c.EntryHash)
	if err != nil {
		return err
	}
	proof, err := hashes(c.Proof)
	if err != nil {
		return err
	}
	return tlog.CheckRecord(tlog.RecordProof(proof), cp.size, cp.root, c.Index, tlog.RecordHash(data))
}

func checkConsistency(c consistency) error {
	old, err := open(c.Old, 0)
	if err != nil {
		return err
	}
	cur, err := open(c.New, 0)
	if err != nil {
		return err
	}
	if old.origin != cur.origin {
		return errors.New("different origins")
	}
	proof, err := hashes(c.Proof)
	if err != nil {
		return err
	}
	return tlog.CheckTree(tlog.TreeProof(proof), cur.size, cur.root, old.size, old.root)
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var list []note.Verifier
	for _, k := range req.Keys {
		v, err := note.NewVerifier(k)
		if err != nil {
			fmt.Fprintln(os.Stderr, "verifier key:", err)
			os.Exit(2)
		}
		list = append(list, v)
	}
	for _, k := range req.Cosigners {
		v, err := NewVerifierForCosignatureV1(k)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cosigner key:", err)
			os.Exit(2)
		}
		list = append(list, v)
	}
	verifiers = note.VerifierList(list...)
	answer := map[string][]string{}
	for _, c := range req.Notes {
		_, err := open(c.Note, c.Signers)
		answer["notes"] = append(answer["notes"], result(err))
	}
	for _, c := range req.Inclusion {
		answer["inclusion"] = append(answer["inclusion"], result(checkInclusion(c)))
	}
	for _, c := range req.Consistency {
		answer["consistency"] = append(answer["consistency"], result(checkConsistency(c)))
	}
	json.NewEncoder(os.Stdout).Encode(answer)
}
