import torch
from hypothesis import given
from hypothesis import strategies as st

from iclab.utils.seeding import derive_seed, make_generator, numpy_generator, recording_seeds


@given(st.integers(0, 2**40), st.text(max_size=8), st.integers(0, 2**40))
def test_derive_seed_is_a_63_bit_pure_function(seed: int, stream: str, step: int) -> None:
    value = derive_seed(seed, stream, step)
    assert 0 <= value < 2**63
    assert value == derive_seed(seed, stream, step)


def test_nearby_triples_do_not_collide() -> None:
    seeds = {derive_seed(s, stream, t) for s in range(20) for t in range(20)
             for stream in ("train", "eval")}
    assert len(seeds) == 20 * 20 * 2
    assert derive_seed(0, "train", 1) != derive_seed(1, "train", 0)


def test_generator_reproduces_its_draws() -> None:
    a = torch.randn(5, generator=make_generator(3, "train", 7))
    b = torch.randn(5, generator=make_generator(3, "train", 7))
    c = torch.randn(5, generator=make_generator(3, "train", 8))
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_numpy_generator_follows_the_torch_generator() -> None:
    """Seeded from one draw of the torch generator: the same state gives the same NumPy
    draws, another state others, and the torch generator moves on."""
    a = numpy_generator(make_generator(2, "train", 3)).standard_gamma(2.0, 8)
    b = numpy_generator(make_generator(2, "train", 3)).standard_gamma(2.0, 8)
    c = numpy_generator(make_generator(2, "train", 4)).standard_gamma(2.0, 8)
    assert (a == b).all() and not (a == c).any()
    generator = make_generator(2, "train", 3)
    numpy_generator(generator)
    after = torch.randn(4, generator=generator)
    assert not torch.equal(after, torch.randn(4, generator=make_generator(2, "train", 3)))


def test_recording_seeds_sees_every_generator_made_from_a_seed_but_fixed_ones() -> None:
    """What lets ``iclab theory`` refuse a --seed nothing draws from."""
    with recording_seeds() as used:
        assert used == set()
        make_generator(7, "a", 3)
        make_generator(0, "probe", fixed=True)   # a constant of the code: not recorded
        with recording_seeds() as inner:
            make_generator(9, "b")
    make_generator(11, "c")                      # outside: not recorded
    assert used == {7, 9} and inner == {9}
    assert make_generator(0, "p", fixed=True).initial_seed() == \
        make_generator(0, "p").initial_seed()    # fixed changes nothing drawn
