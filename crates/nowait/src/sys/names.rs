//! Names for what the kernel answers: errno names and filesystem names, one
//! table each, used by every report and error message.

/// `f_type` of tmpfs (`TMPFS_MAGIC`).
pub(crate) const TMPFS_MAGIC: i64 = 0x0102_1994;
/// `f_type` of ramfs (`RAMFS_MAGIC`).
pub(crate) const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// `f_type` of fuse, fuseblk and virtiofs mounts (`FUSE_SUPER_MAGIC`).
pub(crate) const FUSE_MAGIC: i64 = 0x6573_5546;

/// Name of a filesystem from its `f_type` magic number.
pub fn fs_name(magic: i64) -> &'static str {
    match magic {
        0xEF53 => "ext4",
        0x5846_5342 => "xfs",
        TMPFS_MAGIC => "tmpfs",
        RAMFS_MAGIC => "ramfs",
        0x9123_683E => "btrfs",
        0x794C_7630 => "overlayfs",
        FUSE_MAGIC => "fuse",
        0x6969 => "nfs",
        0xF2F5_2010 => "f2fs",
        0x2FC1_2FC1 => "zfs",
        0x5346_544E => "ntfs",
        0x4d44 => "vfat",
        0x6264_6576 => "bdev",
        0x1CD1 => "devpts",
        0x9FA0 => "proc",
        0x6265_6572 => "sysfs",
        0x0102_1997 => "9p",
        _ => "unknown",
    }
}

/// Name of an errno for reports (`EINVAL`, …; `errno N` for the rest).
pub fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ECANCELED => "ECANCELED",
        libc::ETIME => "ETIME",
        // The others a file's open, read or probe can answer.
        libc::ESRCH => "ESRCH",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::ENOTBLK => "ENOTBLK",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::ENOTTY => "ENOTTY",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::EDEADLK => "EDEADLK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOLCK => "ENOLCK",
        libc::ELOOP => "ELOOP",
        libc::ENODATA => "ENODATA",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::ENOBUFS => "ENOBUFS",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ENOTCONN => "ENOTCONN",
        libc::ECONNRESET => "ECONNRESET",
        libc::ESTALE => "ESTALE",
        libc::EUCLEAN => "EUCLEAN",
        libc::EREMOTEIO => "EREMOTEIO",
        libc::EDQUOT => "EDQUOT",
        libc::ENOMEDIUM => "ENOMEDIUM",
        libc::EMEDIUMTYPE => "EMEDIUMTYPE",
        libc::EKEYREVOKED => "EKEYREVOKED",
        libc::EHWPOISON => "EHWPOISON",
        _ => return format!("errno {e}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_names_cover_the_filesystems_we_test_on() {
        assert_eq!(fs_name(0xEF53), "ext4");
        assert_eq!(fs_name(0x5846_5342), "xfs");
        assert_eq!(fs_name(0x0102_1994), "tmpfs");
        assert_eq!(fs_name(0x8584_58f6), "ramfs");
        assert_eq!(fs_name(12345), "unknown");
    }

    #[test]
    fn errno_names_are_symbolic() {
        assert_eq!(errno_name(libc::EOPNOTSUPP), "EOPNOTSUPP");
        assert_eq!(errno_name(libc::ESPIPE), "ESPIPE");
        assert_eq!(errno_name(libc::ENOTDIR), "ENOTDIR");
        assert_eq!(errno_name(9999), "errno 9999");
    }
}
