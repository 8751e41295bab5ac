//! pgbench's pseudo-random numbers, bit for bit: PostgreSQL's `pg_prng`
//! (xoroshiro128** seeded through splitmix64) and the way pgbench seeds one
//! generator per client from `--random-seed`.
//!
//! Why not a crate's generator: `permute()` and `:default_seed` must give the
//! same numbers as pgbench for the same seed (pgbench's own tests pin
//! `permute` results across architectures), and that depends on PostgreSQL's
//! seeding, range and double conventions, not only on the core algorithm.

/// One pseudo-random sequence (PostgreSQL's `pg_prng_state`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prng {
    s0: u64,
    s1: u64,
}

impl Prng {
    /// A sequence seeded from a 64-bit integer, as `pg_prng_seed` does.
    pub fn new(seed: u64) -> Prng {
        let mut splitmix = seed;
        let s0 = splitmix64(&mut splitmix);
        let s1 = splitmix64(&mut splitmix);
        if s0 == 0 && s1 == 0 {
            // All zeroes is a fixed point; PostgreSQL then uses Knuth's LCG constants.
            return Prng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            };
        }
        Prng { s0, s1 }
    }

    /// The next 64 random bits (xoroshiro128** 1.0).
    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let value = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        value
    }

    /// Uniform in `[min, max]` by bitmask rejection (`pg_prng_uint64_range`);
    /// `min` when the range is empty.
    pub fn u64_in(&mut self, min: u64, max: u64) -> u64 {
        if max <= min {
            return min;
        }
        let range = max - min;
        let shift = range.leading_zeros();
        loop {
            let value = self.next_u64() >> shift;
            if value <= range {
                return min + value;
            }
        }
    }

    /// Uniform in `[0, 1)` with 52 random bits (`pg_prng_double`).
    pub fn double(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 * (1.0 / (1u64 << 52) as f64)
    }

    /// A standard normal draw by Box-Muller with the sine (`pg_prng_double_normal`).
    pub fn double_normal(&mut self) -> f64 {
        let u1 = 1.0 - self.double();
        let u2 = 1.0 - self.double();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).sin()
    }
}

/// splitmix64, which fills the generator's state from a seed.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut value = *state;
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// The random state of a run, seeded as pgbench seeds it from `--random-seed`:
/// one base sequence gives each client its own generator (in client order),
/// then `:default_seed`.
#[derive(Debug, Clone)]
pub struct RandomSeeds {
    /// One generator per client, for the random functions of its scripts.
    pub clients: Vec<Prng>,
    /// `:default_seed`: the seed of `hash*()` and `permute()` without one.
    pub default_seed: i64,
    /// `:random_seed`: the run's seed.
    pub random_seed: i64,
}

impl RandomSeeds {
    /// Client `client_id`'s generator and automatic variables.
    pub fn client(&self, client_id: u32) -> (Prng, super::Automatic) {
        let automatic = super::Automatic {
            client_id,
            default_seed: self.default_seed,
            random_seed: self.random_seed,
        };
        let prng = self.clients.get(client_id as usize).cloned();
        (
            prng.unwrap_or_else(|| Prng::new(self.random_seed as u64 ^ u64::from(client_id))),
            automatic,
        )
    }

    /// The generators of `clients` clients and the automatic seeds, from `seed`.
    pub fn new(seed: u64, clients: u32) -> RandomSeeds {
        let mut base = Prng::new(seed);
        let clients = (0..clients).map(|_| Prng::new(base.next_u64())).collect();
        RandomSeeds {
            clients,
            default_seed: base.next_u64() as i64,
            random_seed: seed as i64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_stay_inside_and_empty_ranges_give_the_minimum() {
        let mut prng = Prng::new(1);
        for _ in 0..10_000 {
            assert!((10..=19).contains(&prng.u64_in(10, 19)));
            let double = prng.double();
            assert!((0.0..1.0).contains(&double));
        }
        assert_eq!(prng.u64_in(7, 7), 7);
        assert_eq!(prng.u64_in(9, 3), 9);
        let full = prng.u64_in(0, u64::MAX);
        let _ = full;
    }

    #[test]
    fn the_same_seed_gives_the_same_sequence() {
        let mut a = Prng::new(5432);
        let mut b = Prng::new(5432);
        let first: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
        let second: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
        assert_eq!(first, second);
        assert_ne!(Prng::new(5433).next_u64(), first[0]);
    }
}
