// SPDX-License-Identifier: Apache-2.0
//! Element types the library reduces, and reduction operators.
use disttrain_sys as sys;

mod sealed {
    pub trait Sealed {}
}

/// A type whose values the library can move and reduce: f32, f64, i8, u8, i32, i64,
/// Bf16 and F16. Sealed: its size must equal the library's size of `DTYPE`, so the
/// binding alone implements it.
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {
    /// The dt_dtype_t of this type.
    const DTYPE: sys::dt_dtype_t;
}

macro_rules! element {
    ($t:ty, $d:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: sys::dt_dtype_t = $d;
        }
    };
}

element!(f32, sys::DT_FLOAT32);
element!(f64, sys::DT_FLOAT64);
element!(i8, sys::DT_INT8);
element!(u8, sys::DT_UINT8);
element!(i32, sys::DT_INT32);
element!(i64, sys::DT_INT64);
element!(Bf16, sys::DT_BFLOAT16);
element!(F16, sys::DT_FLOAT16);

/// bfloat16: the upper 16 bits of an f32. The library reduces it in f32.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Bf16(pub u16);

impl Bf16 {
    /// Rounds to nearest, ties to even; NaN stays NaN.
    pub fn from_f32(x: f32) -> Bf16 {
        let b = x.to_bits();
        if x.is_nan() {
            return Bf16(((b >> 16) | 0x40) as u16);
        }
        Bf16((b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16)
    }

    pub fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

/// IEEE 754 binary16. The library reduces it in f32.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct F16(pub u16);

impl F16 {
    /// Rounds to nearest, ties to even; too large becomes infinity.
    pub fn from_f32(x: f32) -> F16 {
        let b = x.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xff) as i32;
        let man = b & 0x7f_ffff;
        if exp == 0xff {
            return F16(sign | 0x7c00 | if man != 0 { 0x200 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        let (r, rem, half) = if e <= 0 {
            if e < -10 {
                return F16(sign);
            }
            // Subnormal: value = r * 2^-24 with r = (1.man * 2^23) >> (14 - e).
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            (m >> shift, m & ((1 << shift) - 1), 1u32 << (shift - 1))
        } else {
            (((e as u32) << 10) | (man >> 13), man & 0x1fff, 0x1000)
        };
        // A carry out of the mantissa correctly bumps the exponent (up to infinity).
        let up = rem > half || (rem == half && (r & 1) == 1);
        F16(sign | (r + up as u32) as u16)
    }

    pub fn to_f32(self) -> f32 {
        let h = self.0 as u32;
        let sign = (h & 0x8000) << 16;
        let exp = (h >> 10) & 0x1f;
        let man = h & 0x3ff;
        if exp == 0 {
            let v = man as f32 * (1.0 / 16_777_216.0); // man * 2^-24
            return if sign != 0 { -v } else { v };
        }
        let bits = if exp == 0x1f {
            sign | 0x7f80_0000 | (man << 13)
        } else {
            sign | ((exp + 112) << 23) | (man << 13)
        };
        f32::from_bits(bits)
    }
}

/// dt_reduce_op_t. Avg divides the sum by the number of ranks (integer division for
/// integers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Avg,
    Min,
    Max,
    Prod,
}

impl ReduceOp {
    pub fn raw(self) -> sys::dt_reduce_op_t {
        match self {
            ReduceOp::Sum => sys::DT_SUM,
            ReduceOp::Avg => sys::DT_AVG,
            ReduceOp::Min => sys::DT_MIN,
            ReduceOp::Max => sys::DT_MAX,
            ReduceOp::Prod => sys::DT_PROD,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_sizes_match_the_library() {
        fn size<T: Element>() -> (usize, usize) {
            (std::mem::size_of::<T>(), unsafe { sys::dt_dtype_size(T::DTYPE) })
        }
        for (ours, lib) in [size::<f32>(), size::<f64>(), size::<i8>(), size::<u8>(),
                            size::<i32>(), size::<i64>(), size::<Bf16>(), size::<F16>()] {
            assert_eq!(ours, lib);
        }
    }

    #[test]
    fn bf16_round_trips_and_rounds_to_even() {
        for x in [0.0f32, 1.0, -2.5, 3.0e38, 1.0e-38] {
            let y = Bf16::from_f32(x).to_f32();
            assert!((y - x).abs() <= x.abs() / 128.0, "{x} -> {y}");
        }
        assert_eq!(Bf16::from_f32(1.0).0, 0x3f80);
        // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to the even mantissa (1.0).
        assert_eq!(Bf16::from_f32(1.0 + 1.0 / 256.0).0, 0x3f80);
        assert!(Bf16::from_f32(f32::NAN).to_f32().is_nan());
    }

    #[test]
    fn f16_round_trips_and_saturates() {
        assert_eq!(F16::from_f32(1.0).0, 0x3c00);
        assert_eq!(F16::from_f32(-2.0).0, 0xc000);
        assert_eq!(F16::from_f32(65504.0).0, 0x7bff);
        assert_eq!(F16::from_f32(1.0e6).0, 0x7c00); // infinity
        assert_eq!(F16::from_f32(5.960_464_5e-8).0, 0x0001); // smallest subnormal
        assert_eq!(F16(0x0001).to_f32(), 5.960_464_5e-8);
        for x in [0.5f32, 3.140625, -1000.0, 6.1e-5, 1.0e-6] {
            let y = F16::from_f32(x).to_f32();
            assert!((y - x).abs() <= x.abs() / 1024.0 + 6.0e-8, "{x} -> {y}");
        }
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
    }
}
