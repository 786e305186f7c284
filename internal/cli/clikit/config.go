package clikit

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ApplyConfig fills the flags of fs that the command line left unset: from
// the environment (TXINBOX_ and the flag's name in upper case with _ for -,
// e.g. TXINBOX_AS4_LISTEN), else from the YAML file at path, whose keys are
// the flag names (an underscore may stand for a dash: accept_durability_risk
// is --accept-durability-risk). Precedence: command line, environment, file, defaults.
// Errors name the file, line and key, or the variable. A list setting may
// be a YAML sequence: its items are given to a repeatable flag one by one
// (--effect-sql) and joined with commas for the others (--kafka-topics).
func ApplyConfig(fs *flag.FlagSet, env *Env, path string) error {
	_, err := LoadConfig(fs, env, path, nil)
	return err
}

// Section reads one item of a list section of the config file at path
// (serve's "kafka:" list of Kafka sources).
type Section func(item *yaml.Node, path string) error

// ConfigOrigins says where each flag set by the file or the environment
// got its value ("config FILE line N", "environment TXINBOX_X"), so that
// an error found after parsing can name it.
type ConfigOrigins map[string]string

// Locate prefixes an error that starts with a flag's name ("--retention:
// ...") with where that flag was set, if the file or environment set it.
func (o ConfigOrigins) Locate(err error) error {
	if err == nil {
		return nil
	}
	m := flagNameRE.FindStringSubmatch(err.Error())
	if m == nil || o[m[1]] == "" {
		return err
	}
	return fmt.Errorf("%s: %w", o[m[1]], err)
}

var flagNameRE = regexp.MustCompile(`^--([a-z0-9-]+)`)

// LoadConfig is ApplyConfig with list sections (keys that are no flag,
// read by their section func) and the origins of what it set.
func LoadConfig(fs *flag.FlagSet, env *Env, path string, sections map[string]Section) (ConfigOrigins, error) {
	explicit := map[string]bool{"config": true}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	origins := ConfigOrigins{}
	if path != "" {
		if err := applyConfigFile(fs, path, explicit, sections, origins); err != nil {
			return nil, err
		}
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "TXINBOX_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v := env.Getenv(name); v != "" && !explicit[f.Name] && err == nil {
			if r, ok := f.Value.(Repeatable); ok {
				r.Reset() // the environment replaces the file's list
			}
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("environment %s: invalid value %q: %v", name, v, serr)
			}
			origins[f.Name] = "environment " + name
		}
	})
	return origins, err
}

func applyConfigFile(fs *flag.FlagSet, path string, explicit map[string]bool, sections map[string]Section, origins ConfigOrigins) error {
	m, err := readConfigMapping(path)
	if m == nil || err != nil {
		return err
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if fs.Lookup(k.Value) == nil && sections[k.Value] == nil {
			if dashed := strings.ReplaceAll(k.Value, "_", "-"); fs.Lookup(dashed) != nil {
				k.Value = dashed // accept_durability_risk is --accept-durability-risk
			}
		}
		if sec := sections[k.Value]; sec != nil && fs.Lookup(k.Value) == nil {
			if err := applySection(path, k, v, sec); err != nil {
				return err
			}
			continue
		}
		if fs.Lookup(k.Value) == nil || k.Value == "config" {
			return fmt.Errorf("config %s line %d: unknown setting %q (settings are the flags of %s)", path, k.Line, k.Value, fs.Name())
		}
		if err := SetFromYAML(fs, k.Value, v, explicit); err != nil {
			return fmt.Errorf("config %s line %d: %s: %w", path, v.Line, k.Value, err)
		}
		if !explicit[k.Value] {
			origins[k.Value] = fmt.Sprintf("config %s line %d", path, v.Line)
		}
	}
	return nil
}

// firstControlChar finds the first character YAML refuses (its printable
// set: a C0 or C1 control other than tab, line feed, carriage return and
// NEL, DEL, a byte order mark past the start, U+FFFE, U+FFFF), its line
// and column counted in characters from 1. The yaml library's error names
// neither.
func firstControlChar(b []byte) (line, col int, r rune, ok bool) {
	line, col = 1, 0
	for i, r := range string(b) {
		col++
		switch {
		case r == '\n':
			line, col = line+1, 0
		case r == 0xFEFF && i == 0: // the byte order mark: not a column
			col = 0
		case r == '\t' || r == '\r' || r == 0x85:
		case r < 0x20 || (r >= 0x7F && r <= 0x9F) || r == 0xFEFF || r == 0xFFFE || r == 0xFFFF:
			return line, col, r, true
		}
	}
	return 0, 0, 0, false
}

// readConfigMapping parses the file into its top mapping; nil for an
// empty file.
func readConfigMapping(path string) (*yaml.Node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		if line, col, r, ok := firstControlChar(b); ok && strings.Contains(err.Error(), "control characters") {
			return nil, fmt.Errorf("config %s line %d column %d: control character %U not allowed in YAML", path, line, col, r)
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil // an empty file
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config %s line %d: want a mapping of settings (flag names to values)", path, m.Line)
	}
	return m, nil
}

// applySection gives each item of a list section to its section func.
func applySection(path string, k, v *yaml.Node, sec Section) error {
	if v.Kind != yaml.SequenceNode {
		return fmt.Errorf("config %s line %d: %s: want a list of sections, e.g. %s: [{name: a, ...}, {name: b, ...}]", path, v.Line, k.Value, k.Value)
	}
	for _, item := range v.Content {
		if item.Kind != yaml.MappingNode {
			return fmt.Errorf("config %s line %d: %s: want a mapping of settings", path, item.Line, k.Value)
		}
		if err := sec(item, path); err != nil {
			return err
		}
	}
	return nil
}

// SetFromYAML sets a flag from one YAML value (each item of a list for a
// repeatable flag), unless the command line set it.
func SetFromYAML(fs *flag.FlagSet, name string, v *yaml.Node, explicit map[string]bool) error {
	values, err := configValues(fs.Lookup(name), v)
	if err != nil || explicit[name] {
		return err
	}
	for _, val := range values {
		if strings.ContainsRune(val, 0) { // YAML's "\0": it would cut a file name short, or fail every insert
			return fmt.Errorf("invalid value %q: has a NUL byte", val)
		}
		if err := fs.Set(name, val); err != nil {
			return fmt.Errorf("invalid value %q: %v", val, err)
		}
	}
	return nil
}

// Repeatable is a flag that adds a value each time it is set; Reset
// empties it (the environment replaces the file's list).
type Repeatable interface{ Reset() }

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
		if _, ok := f.Value.(Repeatable); ok {
			return items, nil
		}
		return []string{strings.Join(items, ",")}, nil
	}
	return nil, fmt.Errorf("want a single value or a list")
}
