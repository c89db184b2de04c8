"""Use cases: one call each, typed in and typed out, under both the CLI and the Python API.

    run_benchmarks.run_benchmarks    run: validate and time variants       -> flow.RunRecord
    tune_params.tune_params          tune: search, then save the best      -> TuneResult
    profile_ncu.profile_cases        profile under Nsight Compute          -> ProfileResult
    profile_ncu.profiled_child       the process ncu profiles              -> rows
    measure_ceilings.measure_ceilings  this GPU's ceilings                 -> CeilingsResult
    compare_runs.compare_runs        A/B verdicts and the CI gate          -> Comparison
    case_history.case_history        a case's runs, regressions marked     -> CaseHistory
    case_history.import_results      results files into the database       -> ImportResult
    catalogue, cluster_status        what list/check and cluster status read

flow.py writes once what the kernel-running ones share: the typed selection, the placement
(this host or a Dask cluster), the recording, and the session's sequence open -> prepare ->
start -> run -> finish. observe.py is the observer protocol by which a use case tells its
caller what happens as it works (the CLI's progress bars and notes; the API passes none).
Nothing here prints or exits: errors are UsageError (one line) or flow.Failed.
"""
