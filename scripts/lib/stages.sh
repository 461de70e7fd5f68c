# Per-stage wall-clock timing for scripts/test and .ci/run (sourced, bash).
#   stage NAME COMMAND [ARGS...]   runs COMMAND as stage NAME and records its time
# The outermost script that sources this file owns the record
# ($POT_STAGE_LOG) and prints the table when it exits, failed or not, so a
# stage that grows, or the one that failed, is seen; scripts it calls (with
# the variable exported) add their stages to the same table.
if [ -z "${POT_STAGE_LOG:-}" ]; then
  POT_STAGE_LOG=$(mktemp "${TMPDIR:-/tmp}/pot-stages.XXXXXX")
  export POT_STAGE_LOG
  _pot_stage_owner=1
  _pot_stage_start=$SECONDS
else
  _pot_stage_owner=0
fi
_pot_stage_name=""

stage() {
  local name=$1
  shift
  _pot_stage_name=$name
  _pot_stage_t0=$SECONDS
  echo
  echo "==== stage $name"
  "$@"
  printf '%s\t%s\tok\n' "$name" "$((SECONDS - _pot_stage_t0))" >>"$POT_STAGE_LOG"
  _pot_stage_name=""
}

_pot_stage_exit() {
  local rc=$1
  if [ -n "$_pot_stage_name" ]; then
    printf '%s\t%s\tFAILED (exit %s)\n' "$_pot_stage_name" "$((SECONDS - _pot_stage_t0))" "$rc" >>"$POT_STAGE_LOG"
  fi
  if [ "$_pot_stage_owner" = 1 ]; then
    echo
    echo "==== stage timings (wall clock, seconds)"
    awk -F'\t' '{ printf "  %-22s %6d  %s\n", $1, $2, $3 }' "$POT_STAGE_LOG"
    printf '  %-22s %6d  %s\n' "total" "$((SECONDS - _pot_stage_start))" "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")"
    rm -f "$POT_STAGE_LOG"
  fi
}
trap '_pot_stage_exit $?' EXIT
