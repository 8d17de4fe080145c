// Compiled only so that CMake has a target to build the tests' precompiled header with.
