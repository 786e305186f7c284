package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/txinbox/txinbox/internal/cli/clikit"
)

// completionCommand is txinbox completion bash|zsh.
type completionCommand struct{}

func (c *completionCommand) Info() clikit.CommandInfo {
	return clikit.CommandInfo{Name: "completion", Args: "SHELL", Summary: "print a bash or zsh completion script",
		Description: `Prints a script that completes txinbox's commands, subcommands and flags in
bash or zsh (SHELL). Other words complete as file names.`,
		Examples: []clikit.Example{
			{Command: "source <(txinbox completion bash)", What: "bash, this shell; or save it as /etc/bash_completion.d/txinbox"},
			{Command: `txinbox completion zsh > "${fpath[1]}/_txinbox"`, What: "zsh, from the next shell on (compinit must run in ~/.zshrc)"},
		},
		ExitCodes: []clikit.ExitCode{{Code: clikit.ExitOK, What: "printed"}, {Code: clikit.ExitUsage, What: "bad flags, or a SHELL other than bash and zsh"}}}
}

func (c *completionCommand) Define(*clikit.FlagSet, *clikit.Env) {}

func (c *completionCommand) Run(_ context.Context, in *clikit.Invocation) int {
	words := completionWords(in.Env, commands())
	switch in.Args[0] {
	case "bash":
		fmt.Fprintf(in.Env.Stdout, bashCompletion, words)
	case "zsh":
		fmt.Fprintf(in.Env.Stdout, zshCompletion, words)
	default:
		return clikit.UsageError(in.Env, in.Path, fmt.Sprintf("SHELL %q: use bash or zsh", in.Args[0]))
	}
	return clikit.ExitOK
}

// completionWords writes the shell function __txinbox_complete CMD SUB
// CUR, which prints the words that may follow (none: file names). Its
// syntax is both bash's and zsh's.
func completionWords(env *clikit.Env, root []clikit.Command) string {
	var b strings.Builder
	var names []string
	for _, c := range root {
		if !c.Info().Hidden {
			names = append(names, c.Info().Name)
		}
	}
	fmt.Fprintf(&b, "__txinbox_complete() {\n    local cmd=\"$1\" sub=\"$2\" cur=\"$3\"\n    case \"$cmd\" in\n")
	fmt.Fprintf(&b, "    '') echo '%s help --help --version' ;;\n    help) echo '%s' ;;\n", strings.Join(names, " "), strings.Join(names, " "))
	for _, c := range root {
		info := c.Info()
		if info.Hidden {
			continue
		}
		fmt.Fprintf(&b, "    %s)\n", info.Name)
		if len(info.Subcommands) == 0 {
			leafWords(&b, env, c, "        ")
			continue
		}
		var subs []string
		for _, s := range info.Subcommands {
			subs = append(subs, s.Info().Name)
		}
		b.WriteString("        case \"$sub\" in\n")
		fmt.Fprintf(&b, "        '') if [[ $cur == -* ]]; then echo '%s'; else echo '%s'; fi ;;\n",
			defaultFlags(env, info), strings.Join(subs, " "))
		fmt.Fprintf(&b, "        -*) [[ $cur == -* ]] && echo '%s' ;;\n", defaultFlags(env, info))
		for _, s := range info.Subcommands {
			fmt.Fprintf(&b, "        %s)\n", s.Info().Name)
			leafWords(&b, env, s, "            ")
		}
		b.WriteString("        esac ;;\n")
	}
	b.WriteString("    esac\n}\n")
	return b.String()
}

// leafWords writes the case branch of a command without subcommands: its
// flags after a -, else its SHELL choices or nothing (file names).
func leafWords(w io.Writer, env *clikit.Env, c clikit.Command, indent string) {
	other := ""
	if c.Info().Args == "SHELL" {
		other = "echo 'bash zsh'"
	}
	if other == "" {
		fmt.Fprintf(w, "%s[[ $cur == -* ]] && echo '%s' ;;\n", indent, flagWords(env, c))
		return
	}
	fmt.Fprintf(w, "%sif [[ $cur == -* ]]; then echo '%s'; else %s; fi ;;\n", indent, flagWords(env, c), other)
}

// flagWords are c's flags, --name each, and --help.
func flagWords(env *clikit.Env, c clikit.Command) string {
	fs := clikit.NewFlagSet("")
	c.Define(fs, env)
	var out []string
	for _, n := range fs.Names() {
		out = append(out, "--"+n)
	}
	return strings.Join(append(out, "--help"), " ")
}

// defaultFlags are the flags of a parent's default subcommand, or --help.
func defaultFlags(env *clikit.Env, info clikit.CommandInfo) string {
	if d := clikit.Find(info.Subcommands, info.Default); d != nil {
		return flagWords(env, d)
	}
	return "--help"
}

const bashCompletion = `# bash completion for txinbox: source <(txinbox completion bash)
%s
_txinbox() {
    local cur="${COMP_WORDS[COMP_CWORD]}" cmd="" sub=""
    (( COMP_CWORD > 1 )) && cmd="${COMP_WORDS[1]}"
    (( COMP_CWORD > 2 )) && sub="${COMP_WORDS[2]}"
    COMPREPLY=($(compgen -W "$(__txinbox_complete "$cmd" "$sub" "$cur")" -- "$cur"))
}
complete -o default -F _txinbox txinbox
`

const zshCompletion = `#compdef txinbox
# zsh completion for txinbox: txinbox completion zsh > "${fpath[1]}/_txinbox"
%s
_txinbox() {
    local cmd="" sub="" cur="${words[CURRENT]}"
    (( CURRENT > 2 )) && cmd="${words[2]}"
    (( CURRENT > 3 )) && sub="${words[3]}"
    local -a cands
    cands=(${=$(__txinbox_complete "$cmd" "$sub" "$cur")})
    if (( ${#cands} )); then
        compadd -a cands
    else
        _files
    fi
}
if [[ "$funcstack[1]" == "_txinbox" ]]; then
    _txinbox "$@"
else
    compdef _txinbox txinbox
fi
`
