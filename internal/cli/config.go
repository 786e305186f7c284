package cli

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// applyConfig fills the flags of fs that the command line left unset: from
// the environment (TXINBOX_ and the flag's name in upper case with _ for -,
// e.g. TXINBOX_AS4_LISTEN), else from the YAML file at path, whose keys are
// the flag names. Precedence: command line, environment, file, defaults.
// Errors name the file, line and key, or the variable. A list setting may
// be a YAML sequence: its items are given to a repeatable flag one by one
// (--effect-sql) and joined with commas for the others (--kafka-topics).
func applyConfig(fs *flag.FlagSet, env *Env, path string) error {
	explicit := map[string]bool{"config": true}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	if path != "" {
		if err := applyConfigFile(fs, path, explicit); err != nil {
			return err
		}
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "TXINBOX_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := env.Getenv(name); v != "" && !explicit[f.Name] && err == nil {
			if r, ok := f.Value.(repeatable); ok {
				r.reset() // the environment replaces the file's list
			}
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment %s: invalid value %q: %v", name, v, serr)
			}
		}
	})
	return err
}

func applyConfigFile(fs *flag.FlagSet, path string, explicit map[string]bool) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil // an empty file
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("config %s line %d: want a mapping of settings (flag names to values)", path, m.Line)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if fs.Lookup(k.Value) == nil || k.Value == "config" {
			return fmt.Errorf("config %s line %d: unknown setting %q (settings are the flags of txinbox %s)", path, k.Line, k.Value, fs.Name())
		}
		values, err := configValues(fs.Lookup(k.Value), v)
		if err != nil {
			return fmt.Errorf("config %s line %d: %s: %v", path, v.Line, k.Value, err)
		}
		if explicit[k.Value] {
			continue
		}
		for _, val := range values {
			if err := fs.Set(k.Value, val); err != nil {
				return fmt.Errorf("config %s line %d: %s: invalid value %q: %v", path, v.Line, k.Value, val, err)
			}
		}
	}
	return nil
}

// repeatable is a flag that adds a value each time it is set.
type repeatable interface{ reset() }

// configValues are the values to set a flag to from one YAML value: a
// scalar, or a sequence of scalars (one Set each for a repeatable flag,
// else joined with commas).
func configValues(f *flag.Flag, v *yaml.Node) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		return []string{v.Value}, nil
	case yaml.SequenceNode:
		var items []string
		for _, it := range v.Content {
			if it.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: want a list of single values", it.Line)
			}
			items = append(items, it.Value)
		}
		if _, ok := f.Value.(repeatable); ok {
			return items, nil
		}
		return []string{strings.Join(items, ",")}, nil
	}
	return nil, fmt.Errorf("want a single value or a list")
}
