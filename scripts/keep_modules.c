/* Preloaded into the MPI ranks by scripts/sanitize.sh only: dlclose does nothing, so the plugins
 * Open MPI and PMIx unload at MPI_Finalize stay mapped and LeakSanitizer can name the library of each
 * frame (their own never-freed allocations are then suppressed by name, scripts/lsan_suppressions.txt,
 * and a leak of ours is still reported). */
int dlclose(void *handle) {
  (void)handle;
  return 0;
}
