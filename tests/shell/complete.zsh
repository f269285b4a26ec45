# zsh -f complete.zsh SCRIPT LINE...: what zsh's completion system offers for each LINE (as if
# TAB were pressed after it) with the completion SCRIPT loaded, one `HIT:candidate` a line and
# `END:n` after the n-th line. A real interactive zsh runs in a pseudo-terminal (zsh/zpty);
# compadd is wrapped to print what the completion functions add.
zmodload zsh/zpty
script=$1; shift
zpty z zsh -f -i
zpty -w z "PROMPT='> '; autoload -U compinit; compinit -u -D; eval \"\$(<${(q)script})\""
zpty -w z 'compadd () {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi
  local -a hits; builtin compadd -A hits "$@"; local ret=$?
  (( $#hits )) && print -r -- ${(pj:\n:)${hits/#/HIT:}}
  return ret }'
# Ctrl-T completes the line, then says so: no keys are sent while a completion runs (zsh
# cuts completion short when it sees typeahead).
zpty -w z '_complete_and_mark() { zle complete-word; print -r -- "EN""D:$((++_n))"; }'
zpty -w z 'zle -N _complete_and_mark; bindkey "^T" _complete_and_mark'
zpty -w z "print RE''ADY"
zpty -r z out '*READY*'
n=0
for line in "$@"; do
  (( n++ ))
  zpty -w -n z "$line"$'\C-t'
  zpty -r z out "*END:$n*"
  print -r -- "$out"
  zpty -w -n z $'\C-u'
done
zpty -d z
