"""The Keras bridge: kdist's distributions as Keras sees them, and Keras's seed.

The only wing that touches Keras, and only once the program has imported it
(kdist never imports Keras itself, and works where Keras is not installed). It
sits below the distribution types: it reads kdist distributions through the
small protocol in `views.py` (their mesh, layouts and `KERAS_CLASS`) and never
imports or builds them; `_distribution.current` builds the kdist equivalent
of a Keras distribution from `conversion.describe_keras_distribution`.

Rooms: `loaded` (is Keras imported, and on JAX?), `seed` (the program's own
seed and `set_random_seed`), `views` (kdist objects as Keras sees them: the
Keras-readable DeviceMesh class and the views of kdist layouts and
distributions), `conversion` (Keras meshes, layout maps and distributions as
kdist's: the one conversion path), `sync` (Keras's current distribution kept in
step with kdist's, including when Keras is imported later).

`conversion.install()` registers the bridge with `_state` (below), so that the
layout types, which may not import it, can ask it: for the class of a new
`DeviceMesh` (a `keras.distribution.DeviceMesh` too while Keras is loaded) and to
convert a Keras mesh. kdist/__init__.py calls it before the first public name of
the layouts, the distributions or the backups loads; importing this package
registers nothing (`_start/seed.py` loads `seed` alone, and no layout).

Keras (on its JAX backend) asks its current distribution for the layout of every
variable it creates, of every input batch and of the layer outputs it may
relayout. `kdist.set_distribution()` and `Distribution.scope()` make Keras's
current distribution a *view* of the kdist one: an object of Keras's own
distribution classes (so every `isinstance` check in Keras holds) whose layouts
are Keras `TensorLayout`s carrying kdist's `jax.sharding.NamedSharding`. The view
answers from the kdist distribution, so both always agree. When Keras is imported
after a distribution was set, a one-shot import hook publishes it to Keras as
soon as Keras has loaded.

Public Keras API is used throughout: `keras.distribution.*` classes (subclassed),
`keras.distribution.set_distribution` / `distribution`, `keras.utils.set_random_seed`
and `keras.backend.backend()`. Two things have no public API: the base class
`Distribution` (found through the public `DataParallel`'s MRO) and the program's
own seed, which `keras.src.utils.rng_utils.get_random_seed` reads as Keras's own
`initialize()` does. tests/keras_models/test_keras_bridge.py pins both against the Keras
versions kdist supports.
"""
