! mpi_split.f90 - a communicator made through the Fortran binding (tests/e2e/mpi_late.py): four
! ranks split into halves {0,1} and {2,3}; in each half local rank 0 computes before an
! MPI_Barrier on the half, which local rank 1 waits at.
program mpi_split
    use mpi
    implicit none
    integer :: ierr, rank, half, local, i
    double precision :: x
    call mpi_init(ierr)
    call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
    call mpi_comm_split(MPI_COMM_WORLD, rank / 2, rank, half, ierr)
    call mpi_comm_rank(half, local, ierr)
    x = 1.0d0
    if (local == 0) then
        do i = 1, 20000000
            x = x * 1.0000001d0 + 1.0d-9
        end do
    end if
    call mpi_barrier(half, ierr)
    call mpi_comm_free(half, ierr)
    if (x < 0.0d0) print *, x
    print '(A,I0)', 'split done ', rank
    call mpi_finalize(ierr)
end program mpi_split
