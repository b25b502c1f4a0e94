//! Small value types for built-in state: vectors, colours, affine transforms, GUI dimensions.
//!
//! Invariant: all types are plain `Copy` data compared bit-for-bit through `PartialEq`, so the
//! compare-before-write setters treat `-0.0` and `0.0` as equal and `NaN` as never equal, like
//! the floating-point comparison they are built from.

/// A 3-component single-precision vector (positions, sizes, directions).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec3 {
    /// X component.
    pub x: f32,
    /// Y component.
    pub y: f32,
    /// Z component.
    pub z: f32,
}

impl Vec3 {
    /// The zero vector.
    pub const ZERO: Self = Self::new(0.0, 0.0, 0.0);
    /// The vector of ones.
    pub const ONE: Self = Self::new(1.0, 1.0, 1.0);

    /// Builds a vector.
    pub const fn new(x: f32, y: f32, z: f32) -> Self {
        Self { x, y, z }
    }
}

/// An RGB colour with components in `0.0..=1.0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Color3 {
    /// Red.
    pub r: f32,
    /// Green.
    pub g: f32,
    /// Blue.
    pub b: f32,
}

impl Color3 {
    /// Opaque white.
    pub const WHITE: Self = Self::new(1.0, 1.0, 1.0);
    /// A neutral grey, the default colour of new parts.
    pub const GREY: Self = Self::new(0.64, 0.64, 0.64);

    /// Builds a colour.
    pub const fn new(r: f32, g: f32, b: f32) -> Self {
        Self { r, g, b }
    }
}

/// An affine transform as a row-major 4×4 single-precision matrix (16 floats): rotation and
/// scale in the upper 3×3 block, translation in the last column, `[0, 0, 0, 1]` as the last row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Rows of the matrix.
    pub rows: [[f32; 4]; 4],
}

impl Transform {
    /// The identity transform.
    pub const IDENTITY: Self = Self {
        rows: [
            [1.0, 0.0, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
            [0.0, 0.0, 0.0, 1.0],
        ],
    };

    /// A pure translation.
    pub const fn from_position(position: Vec3) -> Self {
        let mut rows = Self::IDENTITY.rows;
        rows[0][3] = position.x;
        rows[1][3] = position.y;
        rows[2][3] = position.z;
        Self { rows }
    }

    /// The translation part.
    pub const fn position(&self) -> Vec3 {
        Vec3::new(self.rows[0][3], self.rows[1][3], self.rows[2][3])
    }
}

impl Default for Transform {
    fn default() -> Self {
        Self::IDENTITY
    }
}

/// A GUI dimension pair: each axis is a fraction of the parent plus a pixel offset.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UDim2 {
    /// Fraction of the parent's width.
    pub x_scale: f32,
    /// Pixels added horizontally.
    pub x_offset: f32,
    /// Fraction of the parent's height.
    pub y_scale: f32,
    /// Pixels added vertically.
    pub y_offset: f32,
}

impl UDim2 {
    /// Builds a dimension pair.
    pub const fn new(x_scale: f32, x_offset: f32, y_scale: f32, y_offset: f32) -> Self {
        Self {
            x_scale,
            x_offset,
            y_scale,
            y_offset,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translation_lives_in_the_last_column() {
        let t = Transform::from_position(Vec3::new(1.0, 2.0, 3.0));
        assert_eq!(t.position(), Vec3::new(1.0, 2.0, 3.0));
        assert_eq!(t.rows[3], [0.0, 0.0, 0.0, 1.0]);
        assert_eq!(Transform::default().position(), Vec3::ZERO);
    }
}
