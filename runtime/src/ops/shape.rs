//! The shape of a matrix product as the ops take it (row- or column-major), the column-major
//! call it becomes, and the checks of operands against it, with messages in the user's terms.

use crate::error::{Error, Result};
use crate::ffi::blas::{Batch, CheckedGemm, DimsFault, GemmDims, Matrix};

/// How the matrices of an op are stored; the same for `A`, `B` and `C`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Layout {
    /// Each row contiguous: element `(i, j)` of a matrix with leading dimension `ld` is at
    /// `i * ld + j` (`ld` ≥ its columns as stored). What a `Vec` of rows laid end to end is.
    #[default]
    RowMajor,
    /// Each column contiguous (cuBLAS's own order): element `(i, j)` is at `j * ld + i`
    /// (`ld` ≥ its rows as stored).
    ColumnMajor,
}

/// `C = op(A) op(B)` with `C` of `m × n`, `op(A)` of `m × k`, `op(B)` of `k × n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    pub(super) layout: Layout,
    pub(super) transa: bool,
    pub(super) transb: bool,
    pub(super) m: usize,
    pub(super) n: usize,
    pub(super) k: usize,
    pub(super) lda: usize,
    pub(super) ldb: usize,
    pub(super) ldc: usize,
    /// Batch count and strides of `a`, `b`, `c`, in elements.
    pub(super) batch: Option<(usize, [usize; 3])>,
}

/// The column-major call of a shape: for row-major matrices, `Cᵀ = op(B)ᵀ op(A)ᵀ`, so the
/// call's `A` is the user's `b` and its `B` the user's `a` (`swapped`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Call {
    /// The call's dimensions, checked once for every issue.
    pub(super) gemm: CheckedGemm,
    pub(super) swapped: bool,
    /// The elements the user's `a`, `b` and `c` must hold.
    pub(super) needs: [usize; 3],
}

impl Shape {
    /// The column-major call, or why the shape is wrong.
    pub(super) fn call(&self) -> Result<Call> {
        let swapped = self.layout == Layout::RowMajor;
        let batch = self.batch.map(|(count, [sa, sb, sc])| {
            let (stride_a, stride_b) = if swapped { (sb, sa) } else { (sa, sb) };
            Batch {
                count,
                stride_a,
                stride_b,
                stride_c: sc,
            }
        });
        let dims = if swapped {
            GemmDims {
                trans_a: self.transb,
                trans_b: self.transa,
                m: self.n,
                n: self.m,
                k: self.k,
                lda: self.ldb,
                ldb: self.lda,
                ldc: self.ldc,
                batch,
            }
        } else {
            GemmDims {
                trans_a: self.transa,
                trans_b: self.transb,
                m: self.m,
                n: self.n,
                k: self.k,
                lda: self.lda,
                ldb: self.ldb,
                ldc: self.ldc,
                batch,
            }
        };
        let gemm = dims.checked().map_err(|f| self.fault(f, swapped))?;
        let needs = gemm.needs();
        let needs = if swapped {
            [needs[1], needs[0], needs[2]]
        } else {
            needs
        };
        Ok(Call {
            gemm,
            swapped,
            needs,
        })
    }

    /// The user's name of a matrix of the column-major call.
    fn name(matrix: Matrix, swapped: bool) -> &'static str {
        match (matrix, swapped) {
            (Matrix::A, false) | (Matrix::B, true) => "a",
            (Matrix::B, false) | (Matrix::A, true) => "b",
            (Matrix::C, _) => "c",
        }
    }

    /// A matrix as stored, for messages: `a 4×2 matrix (row-major, transposed, lda 2)`.
    pub(super) fn describe(&self, which: &str) -> String {
        let (rows, cols, ld, trans) = match which {
            "a" if self.transa => (self.k, self.m, self.lda, true),
            "a" => (self.m, self.k, self.lda, false),
            "b" if self.transb => (self.n, self.k, self.ldb, true),
            "b" => (self.k, self.n, self.ldb, false),
            _ => (self.m, self.n, self.ldc, false),
        };
        let layout = match self.layout {
            Layout::RowMajor => "row-major",
            Layout::ColumnMajor => "column-major",
        };
        let trans = if trans { ", stored transposed" } else { "" };
        format!("a {rows}×{cols} matrix ({layout}{trans}, ld{which} {ld})")
    }

    fn fault(&self, fault: DimsFault, swapped: bool) -> Error {
        Error::InvalidArgument(match fault {
            DimsFault::LeadingDim { matrix, ld, rows } => {
                let name = Shape::name(matrix, swapped);
                let what = if swapped { "columns" } else { "rows" };
                format!(
                    "ld{name} is {ld}, below the {what} of `{name}` as stored ({}): each {} of \
                     `{name}` must fit in one leading dimension",
                    rows.max(1),
                    if swapped { "row" } else { "column" }
                )
            }
            DimsFault::TooLarge { what, value } => {
                format!("{what} is {value}, over what cuBLAS takes (i32 sizes, i64 strides)")
            }
            DimsFault::Stride {
                matrix,
                stride,
                span,
            } => format!(
                "the batch stride of `{}` is {stride} elements, below one matrix's {span}: \
                 batches of a written matrix must not overlap",
                Shape::name(matrix, swapped)
            ),
            DimsFault::Overflow => "the matrices' element counts overflow usize".into(),
        })
    }

    /// Refuses operands shorter than the shape needs, naming the first such operand.
    #[inline]
    pub(super) fn check_lengths(&self, needs: &[usize; 3], lens: [usize; 3]) -> Result<()> {
        // Every issue asks this between library calls, whose code evicts the caller's: the
        // check alone in line, the message out of it.
        if lens[0] >= needs[0] && lens[1] >= needs[1] && lens[2] >= needs[2] {
            return Ok(());
        }
        self.too_short(needs, lens)
    }

    /// [`Shape::check_lengths`]'s error: which operand is too short.
    #[cold]
    #[inline(never)]
    fn too_short(&self, needs: &[usize; 3], lens: [usize; 3]) -> Result<()> {
        for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
            if lens[i] < needs[i] {
                let batches = match self.batch {
                    Some((count, strides)) => {
                        format!(" in {count} batches {} elements apart", strides[i])
                    }
                    None => String::new(),
                };
                return Err(Error::InvalidArgument(format!(
                    "operand `{name}` holds {} element(s), but {}{batches} needs {}; pass a \
                     longer buffer or fix the op's shape",
                    lens[i],
                    self.describe(name),
                    needs[i]
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may unwrap
mod tests {
    use super::*;

    fn row_major(m: usize, n: usize, k: usize) -> Shape {
        Shape {
            layout: Layout::RowMajor,
            transa: false,
            transb: false,
            m,
            n,
            k,
            lda: k,
            ldb: n,
            ldc: n,
            batch: None,
        }
    }

    #[test]
    fn a_row_major_product_is_the_transposed_column_major_one() {
        let call = row_major(4, 3, 2).call().unwrap();
        assert!(call.swapped);
        let dims = call.gemm.dims();
        assert_eq!((dims.m, dims.n, dims.k), (3, 4, 2));
        assert_eq!((dims.lda, dims.ldb, dims.ldc), (3, 2, 3));
        assert_eq!(call.needs, [8, 6, 12]);
        let col = Shape {
            layout: Layout::ColumnMajor,
            lda: 4,
            ldb: 2,
            ldc: 4,
            ..row_major(4, 3, 2)
        };
        let call = col.call().unwrap();
        assert!(!call.swapped);
        assert_eq!(call.needs, [8, 6, 12]);
    }

    #[test]
    fn a_short_operand_is_named_with_what_it_needs() {
        let shape = row_major(4, 3, 2);
        let call = shape.call().unwrap();
        assert!(shape.check_lengths(&call.needs, [8, 6, 12]).is_ok());
        let e = shape
            .check_lengths(&call.needs, [8, 5, 12])
            .unwrap_err()
            .to_string();
        assert!(e.contains("operand `b` holds 5 element(s)"), "{e}");
        assert!(e.contains("a 2×3 matrix (row-major, ldb 3) needs 6"), "{e}");
        let e = shape
            .check_lengths(&call.needs, [8, 6, 11])
            .unwrap_err()
            .to_string();
        assert!(e.contains("operand `c`") && e.contains("needs 12"), "{e}");
    }

    #[test]
    fn a_leading_dimension_below_the_stored_width_is_refused_by_its_name() {
        let e = Shape {
            lda: 1,
            ..row_major(4, 3, 2)
        }
        .call()
        .unwrap_err()
        .to_string();
        assert!(e.contains("lda is 1, below the columns of `a`"), "{e}");
        let e = Shape {
            layout: Layout::ColumnMajor,
            lda: 4,
            ldb: 2,
            ldc: 3,
            ..row_major(4, 3, 2)
        }
        .call()
        .unwrap_err()
        .to_string();
        assert!(e.contains("ldc is 3, below the rows of `c`"), "{e}");
    }

    #[test]
    fn transposed_operands_are_measured_as_stored() {
        // Row-major, A stored as k×m (transa), B stored as n×k (transb).
        let shape = Shape {
            transa: true,
            transb: true,
            lda: 4,
            ldb: 2,
            ..row_major(4, 3, 2)
        };
        let call = shape.call().unwrap();
        assert_eq!(call.needs, [8, 6, 12]);
        let e = shape
            .check_lengths(&call.needs, [7, 6, 12])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a 2×4 matrix (row-major, stored transposed, lda 4)"),
            "{e}"
        );
    }

    #[test]
    fn batches_are_checked_against_their_strides() {
        let shape = Shape {
            batch: Some((3, [8, 0, 12])),
            ..row_major(4, 3, 2)
        };
        let call = shape.call().unwrap();
        // b is shared by every batch (stride 0).
        assert_eq!(call.needs, [24, 6, 36]);
        let e = shape
            .check_lengths(&call.needs, [24, 6, 30])
            .unwrap_err()
            .to_string();
        assert!(e.contains("in 3 batches 12 elements apart needs 36"), "{e}");
        let e = Shape {
            batch: Some((3, [8, 6, 10])),
            ..row_major(4, 3, 2)
        }
        .call()
        .unwrap_err()
        .to_string();
        assert!(e.contains("batch stride of `c` is 10"), "{e}");
    }
}
