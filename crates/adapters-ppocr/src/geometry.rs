//! Plane geometry of text regions: convex hulls, minimum-area rotated rectangles, corner
//! order, point-in-quad tests and the perspective transform that cuts a line out of a page.

/// A point in pixels: x to the right, y down.
pub(crate) type Pt = (f32, f32);

/// A rotated rectangle: centre, unit axis `u` and its normal `v`, full extents along them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RotRect {
    pub(crate) center: Pt,
    pub(crate) u: Pt,
    pub(crate) v: Pt,
    pub(crate) len_u: f32,
    pub(crate) len_v: f32,
}

impl RotRect {
    /// The shorter side.
    pub(crate) fn short_side(&self) -> f32 {
        self.len_u.min(self.len_v)
    }

    pub(crate) fn area(&self) -> f32 {
        self.len_u * self.len_v
    }

    pub(crate) fn perimeter(&self) -> f32 {
        2.0 * (self.len_u + self.len_v)
    }

    /// Every side moved outwards by `d` (the rectangle case of a polygon offset: the offset
    /// polygon's round corners have this rectangle as their minimum-area bounding box).
    pub(crate) fn expand(&self, d: f32) -> RotRect {
        RotRect {
            len_u: self.len_u + 2.0 * d,
            len_v: self.len_v + 2.0 * d,
            ..*self
        }
    }

    pub(crate) fn corners(&self) -> [Pt; 4] {
        let (hu, hv) = (self.len_u / 2.0, self.len_v / 2.0);
        let c = self.center;
        let at = |a: f32, b: f32| {
            (
                c.0 + a * self.u.0 + b * self.v.0,
                c.1 + a * self.u.1 + b * self.v.1,
            )
        };
        [at(-hu, -hv), at(hu, -hv), at(hu, hv), at(-hu, hv)]
    }
}

/// The convex hull of `points` (Andrew's monotone chain), counter-clockwise in image
/// coordinates, without collinear points.
pub(crate) fn convex_hull(points: &[(i32, i32)]) -> Vec<(i32, i32)> {
    let mut pts = points.to_vec();
    pts.sort_unstable();
    pts.dedup();
    if pts.len() < 3 {
        return pts;
    }
    let cross = |o: (i32, i32), a: (i32, i32), b: (i32, i32)| {
        i64::from(a.0 - o.0) * i64::from(b.1 - o.1) - i64::from(a.1 - o.1) * i64::from(b.0 - o.0)
    };
    let mut hull: Vec<(i32, i32)> = Vec::with_capacity(2 * pts.len());
    for pass in 0..2 {
        let start = hull.len();
        let iter: Box<dyn Iterator<Item = &(i32, i32)>> = if pass == 0 {
            Box::new(pts.iter())
        } else {
            Box::new(pts.iter().rev())
        };
        for &p in iter {
            while hull.len() >= start + 2
                && cross(hull[hull.len() - 2], hull[hull.len() - 1], p) <= 0
            {
                hull.pop();
            }
            hull.push(p);
        }
        hull.pop();
    }
    hull
}

/// Minimum-area enclosing rectangle of a point set (rotating calipers over the convex hull:
/// the optimal rectangle has one side on a hull edge); `None` for points on one line.
pub(crate) fn min_area_rect(points: &[(i32, i32)]) -> Option<RotRect> {
    let hull = convex_hull(points);
    if hull.len() < 3 {
        return None;
    }
    let hull: Vec<Pt> = hull.iter().map(|&(x, y)| (x as f32, y as f32)).collect();
    let mut best: Option<RotRect> = None;
    for i in 0..hull.len() {
        let (a, b) = (hull[i], hull[(i + 1) % hull.len()]);
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len = (dx * dx + dy * dy).sqrt();
        if len == 0.0 {
            continue;
        }
        let u = (dx / len, dy / len);
        let v = (-u.1, u.0);
        let (mut min_u, mut max_u, mut min_v, mut max_v) = (f32::MAX, f32::MIN, f32::MAX, f32::MIN);
        for p in &hull {
            let pu = p.0 * u.0 + p.1 * u.1;
            let pv = p.0 * v.0 + p.1 * v.1;
            min_u = min_u.min(pu);
            max_u = max_u.max(pu);
            min_v = min_v.min(pv);
            max_v = max_v.max(pv);
        }
        let (len_u, len_v) = (max_u - min_u, max_v - min_v);
        if best.is_none_or(|r| len_u * len_v < r.area()) {
            let (cu, cv) = ((min_u + max_u) / 2.0, (min_v + max_v) / 2.0);
            let center = (cu * u.0 + cv * v.0, cu * u.1 + cv * v.1);
            best = Some(RotRect {
                center,
                u,
                v,
                len_u,
                len_v,
            });
        }
    }
    best
}

/// Four corners as top-left, top-right, bottom-right, bottom-left: the two with the smallest x
/// are the left side (the upper one first), the other two the right side.
pub(crate) fn order_clockwise(mut pts: [Pt; 4]) -> [Pt; 4] {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let (mut l, mut r) = ([pts[0], pts[1]], [pts[2], pts[3]]);
    l.sort_by(|a, b| a.1.total_cmp(&b.1));
    r.sort_by(|a, b| a.1.total_cmp(&b.1));
    [l[0], r[0], r[1], l[1]]
}

/// Whether `p` lies inside (or on the edge of) the convex quad `q`, in either winding.
pub(crate) fn in_convex_quad(q: &[Pt; 4], p: Pt) -> bool {
    let mut sign = 0.0f32;
    for i in 0..4 {
        let (a, b) = (q[i], q[(i + 1) % 4]);
        let cross = (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
        if cross != 0.0 {
            if sign != 0.0 && cross.signum() != sign {
                return false;
            }
            sign = cross.signum();
        }
    }
    true
}

pub(crate) fn dist(a: Pt, b: Pt) -> f32 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}

/// The axis-aligned bounds of `quad`: left, top, right, bottom.
pub(crate) fn bounds(quad: &[Pt; 4]) -> [f32; 4] {
    let xs = quad.map(|p| p.0);
    let ys = quad.map(|p| p.1);
    [
        xs.iter().copied().fold(f32::MAX, f32::min),
        ys.iter().copied().fold(f32::MAX, f32::min),
        xs.iter().copied().fold(f32::MIN, f32::max),
        ys.iter().copied().fold(f32::MIN, f32::max),
    ]
}

/// The projective transform (row-major 3 × 3, last entry 1) that maps each of `from` to the
/// matching point of `to`; `None` when three of the points are collinear.
pub(crate) fn homography(from: [Pt; 4], to: [Pt; 4]) -> Option<[f64; 9]> {
    // h11 x + h12 y + h13 - h31 x X - h32 y X = X, and the same for Y.
    let mut a = [[0f64; 9]; 8];
    for (i, (&(x, y), &(tx, ty))) in from.iter().zip(&to).enumerate() {
        let (x, y, tx, ty) = (f64::from(x), f64::from(y), f64::from(tx), f64::from(ty));
        a[2 * i] = [x, y, 1.0, 0.0, 0.0, 0.0, -x * tx, -y * tx, tx];
        a[2 * i + 1] = [0.0, 0.0, 0.0, x, y, 1.0, -x * ty, -y * ty, ty];
    }
    // Gaussian elimination with partial pivoting.
    for col in 0..8 {
        let pivot = (col..8).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-9 {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col];
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (v, p) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *v -= f * p;
                }
            }
        }
    }
    let h: Vec<f64> = (0..8).map(|i| a[i][8] / a[i][i]).collect();
    Some([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], 1.0])
}

/// `p` through the transform `h`.
pub(crate) fn project(h: &[f64; 9], p: (f64, f64)) -> (f64, f64) {
    let w = h[6] * p.0 + h[7] * p.1 + h[8];
    (
        (h[0] * p.0 + h[1] * p.1 + h[2]) / w,
        (h[3] * p.0 + h[4] * p.1 + h[5]) / w,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hull_drops_inner_and_collinear_points() {
        let pts = [(0, 0), (2, 0), (4, 0), (4, 3), (0, 3), (2, 1), (1, 2)];
        let mut hull = convex_hull(&pts);
        hull.sort_unstable();
        assert_eq!(hull, vec![(0, 0), (0, 3), (4, 0), (4, 3)]);
    }

    #[test]
    fn the_min_area_rect_of_a_tilted_bar_follows_its_tilt() {
        // A bar 20 long and 2 wide at 45 degrees.
        let pts: Vec<(i32, i32)> = (0..20)
            .flat_map(|i| [(i, i), (i + 1, i), (i, i + 1)])
            .collect();
        let r = min_area_rect(&pts).unwrap();
        let long = r.len_u.max(r.len_v);
        assert!(long > 26.0 && long < 29.0, "{r:?}");
        assert!(r.short_side() < 1.5, "{r:?}");
        assert!(min_area_rect(&[(0, 0), (5, 5), (9, 9)]).is_none());
    }

    #[test]
    fn an_axis_aligned_rect_keeps_its_size_and_grows_by_the_offset() {
        let pts = [(10, 20), (50, 20), (50, 30), (10, 30)];
        let r = min_area_rect(&pts).unwrap();
        assert_eq!((r.len_u.max(r.len_v), r.short_side()), (40.0, 10.0));
        let g = r.expand(2.0);
        let [x0, y0, x1, y1] = bounds(&g.corners());
        assert_eq!([x0, y0, x1, y1], [8.0, 18.0, 52.0, 32.0]);
    }

    #[test]
    fn corners_are_put_clockwise_from_the_top_left() {
        let q = order_clockwise([(10.0, 5.0), (0.0, 0.0), (0.0, 5.0), (10.0, 0.0)]);
        assert_eq!(q, [(0.0, 0.0), (10.0, 0.0), (10.0, 5.0), (0.0, 5.0)]);
        assert!(in_convex_quad(&q, (5.0, 2.0)));
        assert!(in_convex_quad(&q, (10.0, 5.0)));
        assert!(!in_convex_quad(&q, (11.0, 2.0)));
    }

    #[test]
    fn a_homography_maps_the_four_points() {
        let from = [(2.0, 1.0), (12.0, 3.0), (11.0, 9.0), (1.0, 8.0)];
        let to = [(0.0, 0.0), (100.0, 0.0), (100.0, 50.0), (0.0, 50.0)];
        let h = homography(from, to).unwrap();
        for (f, t) in from.iter().zip(&to) {
            let (x, y) = project(&h, (f64::from(f.0), f64::from(f.1)));
            assert!((x - f64::from(t.0)).abs() < 1e-6 && (y - f64::from(t.1)).abs() < 1e-6);
        }
        let line = [(0.0, 0.0), (1.0, 1.0), (2.0, 2.0), (3.0, 3.0)];
        assert!(homography(line, to).is_none());
    }
}
