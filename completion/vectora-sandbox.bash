# bash completion for vectora-sandbox(1). Installed as
# /usr/share/bash-completion/completions/vectora-sandbox; or: source this file.
# The verbs and options are those of `vectora-sandbox help --json` (the test
# suite keeps them in step).

_vectora_sandbox() {
        local cur prev verb i
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD-1]}
        local verbs="check plan exec run read ls glob grep write edit shell start logs stop ps status metrics mcp allow init secret help"
        local common="-w --workspace --json --socket --no-daemon --audit-log -h --help"
        local with_arg="-w|--workspace|--socket|--timeout|-e|--env|--cwd|--offset|--limit|--start-line|--max-lines|--max-output|--old|--new|--host|--header|--from-env|--from-file"

        # The verb: the first word that is neither an option nor an option's argument.
        verb=
        for ((i = 1; i < COMP_CWORD; i++)); do
                case ${COMP_WORDS[i]} in
                -w | --workspace | --socket | --timeout | -e | --env | --cwd | --offset | --limit | --start-line | --max-lines | --max-output | --old | --new | --host | --header | --from-env | --from-file) ((i++)) ;;
                -*) ;;
                *) verb=${COMP_WORDS[i]}; break ;;
                esac
        done

        case $prev in
        -w | --workspace | --cwd) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --socket | --from-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --from-env) COMPREPLY=($(compgen -e -- "$cur")); return ;;
        --host) COMPREPLY=(); return ;;
        --header) COMPREPLY=($(compgen -W "X-Api-Key Api-Key X-Auth-Token" -- "$cur")); return ;;
        --timeout | -e | --env | --offset | --limit | --start-line | --max-lines | --max-output | --old | --new) COMPREPLY=(); return ;;
        esac

        if [[ -z $verb ]]; then
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "$common --version" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
                fi
                return
        fi

        local opts=
        case $verb in
        check | plan | shell | mcp) opts="--require-sandbox" ;;
        exec | run) opts="--timeout --max-output -e --env --cwd --no-stdin --require-sandbox" ;;
        read) opts="--offset --limit --start-line --max-lines --require-sandbox" ;;
        ls) opts="--max-entries --require-sandbox" ;;
        glob) opts="--max-results --require-sandbox" ;;
        grep) opts="-g --glob -i --ignore-case -F --fixed-strings -C --context --max-matches --require-sandbox" ;;
        write) opts="--no-parents --require-sandbox" ;;
        edit) opts="--old --new --all --require-sandbox" ;;
        init) opts="--force" ;;
        secret)
                opts="--host --header --from-env --from-file"
                [[ $cur != -* && $prev == secret ]] && { COMPREPLY=($(compgen -W "set list delete" -- "$cur")); return; }
                ;;
        start) opts="--timeout -e --env --cwd --require-sandbox" ;;
        logs) opts="-f --follow" ;;
        stop | ps) opts= ;;
        status | allow | metrics) opts= ;;
        help)
                [[ $cur != -* ]] && { COMPREPLY=($(compgen -W "$verbs" -- "$cur")); return; }
                ;;
        esac
        if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$opts $common" -- "$cur"))
                return
        fi
        case $verb in
        read | write | edit) COMPREPLY=($(compgen -f -- "$cur")) ;;
        ls) COMPREPLY=($(compgen -d -- "$cur")) ;;
        glob | grep) COMPREPLY=($(compgen -f -- "$cur")) ;;
        exec) COMPREPLY=($(compgen -c -- "$cur")) ;;
        *) COMPREPLY=() ;;
        esac
} &&
        complete -F _vectora_sandbox vectora-sandbox
