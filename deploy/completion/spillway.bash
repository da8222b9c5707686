# bash completion for spillway (make install puts it in
# $(PREFIX)/share/bash-completion/completions/spillway).
_spillway() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "sim plan gen demo serve policy submit queue show cancel explain logs context pools costs audit instances admin slurm help version" -- "$cur"))
        return
    fi
    case $cur in
    -*)
        # The options the command's --help lists.
        COMPREPLY=($(compgen -W "$(spillway "${COMP_WORDS[1]}" --help 2>/dev/null |
            grep -o -- '--[a-z][a-z-]*' | sort -u)" -- "$cur"))
        ;;
    *)
        case ${COMP_WORDS[1]} in
        context) COMPREPLY=($(compgen -W "list use current $(spillway context list 2>/dev/null | awk '{print ($1 == "*") ? $2 : $1}')" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -f -- "$cur")) ;;
        esac
        ;;
    esac
}
complete -F _spillway spillway
