package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/goldset/goldset/manifests"
)

// Shell completion (cobra's "goldset completion bash|zsh|fish|powershell"):
// suite names for gen and list, case ids for --case from the named suite or
// bundle.

func completeSuites(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	all, err := manifests.Suites()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, r := range all {
		if strings.HasPrefix(r.Name, prefix) {
			out = append(out, r.Name+"\t"+r.Version)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeRecipeCases lists the case ids of the suites named so far.
func completeRecipeCases(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	var out []string
	for _, name := range args {
		r, err := manifests.LookupSuite(name)
		if err != nil {
			continue
		}
		for _, c := range r.Cases {
			if strings.HasPrefix(c.ID, prefix) {
				out = append(out, c.ID+"\t"+c.Op+" "+c.Split)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeBundleCases lists the case ids of the bundle named by the first
// argument.
func completeBundleCases(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	return completeFromBundle(args, prefix, func(m *manifests.Manifest) (ids, notes []string) {
		for _, c := range m.Cases {
			ids, notes = append(ids, c.ID), append(notes, c.Op+" "+c.Split)
		}
		return ids, notes
	})
}

// completeBundleChains lists the pipeline chain ids of the bundle named by
// the first argument (compare --chain, negatives --chain).
func completeBundleChains(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	return completeFromBundle(args, prefix, func(m *manifests.Manifest) (ids, notes []string) {
		for _, ch := range m.Chains {
			ids, notes = append(ids, ch.ID), append(notes, ch.Kind+" "+ch.Split)
		}
		return ids, notes
	})
}

// completeFromBundle reads the manifest of the bundle named by the first
// argument and offers the ids list returns that start with prefix, each
// with its note as the description.
func completeFromBundle(args []string, prefix string, list func(*manifests.Manifest) (ids, notes []string)) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	m, err := manifests.ReadManifest(args[0])
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	ids, notes := list(m)
	var out []string
	for i, id := range ids {
		if strings.HasPrefix(id, prefix) {
			out = append(out, id+"\t"+notes[i])
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
