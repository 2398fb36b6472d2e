! mpi_ring_f08.f90 - mpi_ring.f90 through the Fortran 2008 bindings ('use mpi_f08': handles and
! statuses of derived types, ierror optional, given to some calls and left out of the others):
! the same calls with the same counts and bytes; usage mpi_ring_f08 N S K MS
program mpi_ring_f08
  use mpi_f08
  implicit none
  integer :: n, s, k, ierr, rank, nranks, next, prev, i, bad, ms
  type(MPI_Request) :: req
  type(MPI_Status) :: st
  character(len=32) :: arg
  character, allocatable :: outb(:), inb(:)
  double precision, allocatable :: a(:), b(:)
  double precision :: t0
  integer(8) :: c0, c1, rate

  call get_command_argument(1, arg); read (arg, *) n
  call get_command_argument(2, arg); read (arg, *) s
  call get_command_argument(3, arg); read (arg, *) k
  call get_command_argument(4, arg); read (arg, *) ms
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  allocate(outb(s), inb(s), a(k), b(k))
  next = mod(rank + 1, nranks)
  prev = mod(rank + nranks - 1, nranks)
  bad = 0
  do i = 0, n - 1
    outb = achar(mod(rank + i, 256))
    call MPI_Isend(outb, s, MPI_BYTE, next, 1, MPI_COMM_WORLD, req)
    call MPI_Recv(inb, s, MPI_BYTE, prev, 1, MPI_COMM_WORLD, st)
    call MPI_Wait(req, MPI_STATUS_IGNORE)
    if (iachar(inb(s)) /= mod(prev + i, 256)) bad = bad + 1
  end do
  do i = 0, n - 1
    outb = achar(mod(rank + 2 * i, 256))
    call MPI_Irecv(inb, s, MPI_BYTE, prev, 2, MPI_COMM_WORLD, req)
    call MPI_Send(outb, s, MPI_BYTE, next, 2, MPI_COMM_WORLD, ierr)
    call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
    if (iachar(inb(1)) /= mod(prev + 2 * i, 256)) bad = bad + 1
  end do
  do i = 1, k
    a(i) = rank + (i - 1)
  end do
  call MPI_Allreduce(a, b, k, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  do i = 1, k
    if (b(i) /= dble(nranks) * (nranks - 1) / 2 + dble(nranks) * (i - 1)) bad = bad + 1
  end do
  if (rank == 0) then
    call spin(3 * ms)
  else
    call spin(ms)
  end if
  call system_clock(c0, rate)
  call MPI_Barrier(MPI_COMM_WORLD)
  call system_clock(c1)
  t0 = dble(c1 - c0) / dble(rate) * 1d9
  print '(A,I0,A,I0,A,I0,A,I0)', 'rank ', rank, ' size ', nranks, ' barrier_ns ', int(t0, 8), &
    ' bad ', bad
  call MPI_Finalize()
  if (bad /= 0) stop 1
contains
  subroutine spin(msec)
    integer, intent(in) :: msec
    real :: t, tend
    double precision :: x
    integer :: j
    call cpu_time(t)
    tend = t + msec / 1000.0
    x = 0
    do while (t < tend)
      do j = 1, 1000
        x = x + j * 1d-9
      end do
      call cpu_time(t)
    end do
    if (x < 0) print *, x
  end subroutine spin
end program mpi_ring_f08
