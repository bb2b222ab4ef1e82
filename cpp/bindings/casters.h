// The nanobind type casters kdist._core's binding files use, included
// together by every one of them: a C++ type (a vector, an optional, a map)
// then crosses into Python the same way in every file, and no file binds it
// as an opaque class because it forgot a caster.
#ifndef KDIST_BINDINGS_CASTERS_H_
#define KDIST_BINDINGS_CASTERS_H_

#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#endif  // KDIST_BINDINGS_CASTERS_H_
