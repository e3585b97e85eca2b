"""(being written) host profiler."""
class HostProfile:  # placeholder
    pass


def profile(model, example_inputs):  # pragma: no cover - placeholder
    raise NotImplementedError
